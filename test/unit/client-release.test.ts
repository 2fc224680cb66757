import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dataAge } from '../../clients/typescript/src/bulk.js';
import { createReadApiClient } from '../../clients/typescript/src/index.js';

// The client's release tooling (clients/typescript/scripts) and the calls' answers to a bad id,
// without an API: the changelog entry a release writes, and what an id that is no installation
// id costs (a rejection, no request).

const SCRIPTS = join(import.meta.dirname, '../../clients/typescript/scripts');
const exec = promisify(execFile);

async function release(file: string, version: string, date = '2026-12-02') {
  try {
    await exec(process.execPath, [join(SCRIPTS, 'changelog-release.mjs'), file, version, date]);
    return 0;
  } catch (error) {
    return (error as { code?: number }).code ?? -1;
  }
}

describe('client release: the changelog entry', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'client-changelog-'));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  const HEAD = '# Changelog\n\nIntro.\n\n';
  const OLD = '## 1.0.0 - 2026-11-27\n\nFirst.\n';

  it('turns Unreleased into the dated entry of the version, an empty Unreleased above it', async () => {
    const file = join(dir, 'a.md');
    await writeFile(file, `${HEAD}## Unreleased\n\n### Added\n- a thing\n\n${OLD}`);
    expect(await release(file, '1.1.0')).toBe(0);
    expect(await readFile(file, 'utf8')).toBe(
      `${HEAD}## Unreleased\n\n_Nothing yet._\n\n## 1.1.0 - 2026-12-02\n\n### Added\n- a thing\n\n${OLD}`,
    );
  });

  it('refuses, leaving the file as it was, an empty Unreleased or a version already there', async () => {
    const file = join(dir, 'b.md');
    const empty = `${HEAD}## Unreleased\n\n_Nothing yet._\n\n${OLD}`;
    await writeFile(file, empty);
    expect(await release(file, '1.1.0')).toBe(1);
    expect(await readFile(file, 'utf8')).toBe(empty);

    const again = `${HEAD}## Unreleased\n\n- more\n\n${OLD}`;
    await writeFile(file, again);
    expect(await release(file, '1.0.0')).toBe(1);
    expect(await readFile(file, 'utf8')).toBe(again);
    expect(await release(file, '1.1.0', 'today')).toBe(2);
  });
});

describe('client: bulk data age', () => {
  const flow = (installationId: number, lastUpdated: string | null) => ({
    installationId,
    data: lastUpdated === null ? null : ({ lastUpdated } as never),
  });

  it('takes the oldest and newest over the flows with data; the others are offline', () => {
    const age = dataAge([
      flow(1, '2026-12-02T06:00:00+00:00'),
      flow(2, null),
      flow(3, '2026-12-02T05:00:00+00:00'),
      flow(4, '2026-12-02T06:30:00+00:00'),
    ]);
    expect(age).toEqual({
      oldestLastModified: new Date('2026-12-02T05:00:00Z'),
      newestLastModified: new Date('2026-12-02T06:30:00Z'),
      offline: [2],
    });
    expect(dataAge([flow(5, null)])).toEqual({
      oldestLastModified: null,
      newestLastModified: null,
      offline: [5],
    });
  });
});

describe('client: an id that is no installation id', () => {
  const requests: string[] = [];
  const client = createReadApiClient({
    baseUrl: 'http://127.0.0.1:1/application/v1',
    apiKey: 'itk_x',
    fetch: async (input) => {
      requests.push(String(input));
      throw new Error('no request was expected');
    },
  });

  it('rejects every read with a RangeError, sends nothing, and throws at no call site', async () => {
    const calls = [
      () => client.getEnergyFlow(1.5),
      () => client.getInstallationDevices(Number.NaN),
      () => client.getEnergyFlows([1, 2 ** 53]),
      () => client.streamEnergyFlow(-0.5).next(),
    ];
    for (const call of calls) {
      let pending: Promise<unknown> | undefined;
      expect(() => {
        pending = call();
      }).not.toThrow();
      await expect(pending).rejects.toBeInstanceOf(RangeError);
    }
    expect(requests).toEqual([]);
  });
});
