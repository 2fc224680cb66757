import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { type E2eStack, msUntil, startE2eStack } from './support/e2e-stack.js';
import {
  apiKeyCreated,
  applicationUpserted,
  deviceState,
  grant,
  installationUpserted,
  membership,
} from './support/events.js';

// The client as an integrator gets it: `npm pack` (prepack compiles dist/ and the example), the
// tarball installed into a project of its own outside the repository by the release's check
// (clients/typescript/scripts/check-package.sh), and the shipped example run from there against
// the real stack: access and telemetry produced to Kafka, consumers, the API over HTTP.

const ROOT = join(import.meta.dirname, '../..');
const PACKAGE = join(ROOT, 'clients/typescript');
const CHECK = join(PACKAGE, 'scripts/check-package.sh');
const exec = promisify(execFile);

/** The API writes date-times in whole seconds. */
const wholeSecondIso = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString();

/** Node 24 (this one) first on PATH, for the example and for npm's own shebang. */
const pathWithThisNode = () => `${dirname(process.execPath)}:${process.env.PATH ?? ''}`;

interface Packed {
  readonly filename: string;
  readonly files: ReadonlyArray<{ path: string }>;
}

async function pack(into: string): Promise<Packed> {
  const { stdout } = await exec('npm', ['pack', '--json', '--pack-destination', into], {
    cwd: PACKAGE,
    env: { ...process.env, PATH: pathWithThisNode() },
    maxBuffer: 16 * 1024 * 1024,
  });
  // prepack's output comes first; the JSON is the rest.
  const [packed] = JSON.parse(stdout.slice(stdout.indexOf('['))) as Packed[];
  return packed as Packed;
}

/** Runs the check as a release does; resolves with its exit code and output either way. */
async function check(tarball: string, env: Record<string, string>, temp: string) {
  try {
    const { stdout, stderr } = await exec('bash', [CHECK, tarball], {
      env: { ...process.env, PATH: pathWithThisNode(), TMPDIR: temp, ...env },
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('client package: the packed tarball, installed elsewhere, against the real stack', () => {
  let stack: E2eStack;
  let temp = '';
  let packed: Packed;
  const key = newApiKey();
  const [live, stale, offline] = [7101, 7102, 7103];
  // Seen 200 s ago: still online (the window is 300 s), STALE to the example (over 2 min).
  const staleSeenMs = Date.now() - 200_000;

  beforeAll(async () => {
    temp = await mkdtemp(join(tmpdir(), 'client-package-'));
    [packed, stack] = await Promise.all([pack(temp), startE2eStack()]);
    for (const id of [live, stale, offline]) {
      const upsert = installationUpserted(installation(id), null);
      await stack.produce('installations', upsert.key, upsert.event);
    }
    for (const k of [
      applicationUpserted(71, { type: 'user', id: 71 }),
      apiKeyCreated('package-key', 71, key),
      ...[live, stale, offline].flatMap((id) => [grant(true, 71, id), membership(true, 71, id)]),
    ]) {
      await stack.produce('access', k.key, k.event);
    }
    const battery = (id: number, seenMs: number) =>
      deviceState(id, 'battery', id, seenMs, { soe: 50, ratedEnergy: 5000, powerDc: 100 });
    for (const k of [battery(live, Date.now() - 1_000), battery(stale, staleSeenMs)]) {
      await stack.produce('telemetry', k.key, k.event);
    }
    const ids = [live, stale, offline].join(',');
    await msUntil(
      'both flows served',
      Date.now(),
      async () => {
        const r = await stack.call(
          `/getInstallationsCurrentEnergyFlow?installationIds=${ids}`,
          key,
        );
        const flows = (r.body.flows ?? []) as Array<{ data: unknown }>;
        return r.status === 200 && flows.filter((f) => f.data !== null).length === 2;
      },
      30_000,
    );
  }, 180_000);
  afterAll(async () => {
    await stack?.stop();
    if (temp) await rm(temp, { recursive: true, force: true });
  });

  it('packs the compiled library and example, the README and changelog, and no source', () => {
    expect(relative(ROOT, temp).startsWith('..')).toBe(true); // outside the repository
    const paths = packed.files.map((f) => f.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'dist/index.js',
        'dist/index.d.ts',
        'examples/poller.js',
        'examples/poller.ts',
        'README.md',
        'CHANGELOG.md',
        'package.json',
      ]),
    );
    expect(paths.filter((p) => p.startsWith('src/') || p.startsWith('scripts/'))).toEqual([]);
  });

  it('runs the shipped example from the installed package with a real key', async () => {
    const result = await check(
      join(temp, packed.filename),
      { READ_API_URL: `${stack.origin}${stack.config.api.basePath}`, READ_API_KEY: key },
      temp,
    );
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const lines = result.stdout.split('\n');
    const flowLine = (id: number, state: string) => new RegExp(`^${id} ${state} \\S+ W house$`);
    expect(lines.filter((l) => flowLine(live, 'live').test(l))).toHaveLength(1);
    expect(lines.filter((l) => flowLine(stale, 'STALE').test(l))).toHaveLength(1);
    expect(lines).toContain(`${offline} no device online - W house`);
    // One bulk request for the three; the oldest data age is the stale installation's.
    expect(lines).toContain(
      `1 requests, 0 answered 304, oldest data ${wholeSecondIso(staleSeenMs)}, 1 offline, quota left: off`,
    );
    expect(lines.at(-2)).toBe('check: ok');
    expect(result.stdout).not.toContain(key);
  });

  it('fails the check when the key reads nothing, without printing the key', async () => {
    const unknown = newApiKey();
    const result = await check(
      join(temp, packed.filename),
      { READ_API_URL: `${stack.origin}${stack.config.api.basePath}`, READ_API_KEY: unknown },
      temp,
    );
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('401 UNAUTHORIZED');
    expect(result.stderr).toContain('check: the example failed');
    expect(`${result.stdout}${result.stderr}`).not.toContain(unknown);
  });
});
