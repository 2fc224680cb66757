import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// The config infra/prometheus.sh writes for the demo's Prometheus (`config`; promtool checks it
// there): the API replicas and consumer processes it scrapes come from target files it watches,
// written from PROMETHEUS_API_TARGETS / PROMETHEUS_CONSUMER_TARGETS or the demo's ports, and the
// alerts' runbook base is an external label.

const root = fileURLToPath(new URL('../../', import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function prometheusSh(command: string, env: Record<string, string>, dir?: string) {
  const target = dir ?? mkdtempSync(join(tmpdir(), 'prometheus-config-'));
  if (!dir) dirs.push(target);
  const clean = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !/^(API_PORT|API_OPS_PORT|CONSUMER_HEALTH_PORT|PROMETHEUS_.*)$/.test(k),
    ),
  );
  const run = spawnSync('bash', [`${root}infra/prometheus.sh`, command], {
    encoding: 'utf8',
    env: { ...clean, PROMETHEUS_DIR: target, ...env },
  });
  const read = (file: string) => readFileSync(join(target, file), 'utf8');
  return {
    run,
    dir: target,
    read,
    targets: (job: string) => JSON.parse(read(`targets/${job}.json`)),
  };
}

describe("the demo Prometheus's config", () => {
  it('scrapes every listed API replica and consumer process through the target files', {
    timeout: 120_000,
  }, () => {
    const { run, read, targets } = prometheusSh('config', {
      PROMETHEUS_API_TARGETS: '127.0.0.1:18810, 127.0.0.1:18811',
      PROMETHEUS_CONSUMER_TARGETS: '127.0.0.1:18812',
      PROMETHEUS_RUNBOOKS_URL:
        'https://git.example.com/org/read-model/blob/main/docs/operations.md',
    });
    expect(run.status, run.stderr).toBe(0);
    const config = parse(read('prometheus.yml'));
    expect(config.global.external_labels).toEqual({
      runbooks_url: 'https://git.example.com/org/read-model/blob/main/docs/operations.md',
    });
    expect(
      config.scrape_configs.map(
        (s: { job_name: string; file_sd_configs: { files: string[] }[] }) => [
          s.job_name,
          s.file_sd_configs[0]?.files.map((f) => f.split('/').slice(-2).join('/')),
        ],
      ),
    ).toEqual([
      ['api', ['targets/api.json']],
      ['consumers', ['targets/consumers.json']],
    ]);
    expect(targets('api')).toEqual([{ targets: ['127.0.0.1:18810', '127.0.0.1:18811'] }]);
    expect(targets('consumers')).toEqual([{ targets: ['127.0.0.1:18812'] }]);
  });

  it("defaults to the demo's ports: the API's ops port when set, else its port", {
    timeout: 120_000,
  }, () => {
    const plain = prometheusSh('config', { API_PORT: '18820', CONSUMER_HEALTH_PORT: '18821' });
    expect(plain.run.status, plain.run.stderr).toBe(0);
    expect(plain.targets('api')).toEqual([{ targets: ['127.0.0.1:18820'] }]);
    expect(plain.targets('consumers')).toEqual([{ targets: ['127.0.0.1:18821'] }]);
    expect(parse(plain.read('prometheus.yml')).global.external_labels.runbooks_url).toBe(
      `file://${root}docs/operations.md`,
    );
    const ops = prometheusSh('config', { API_PORT: '18820', API_OPS_PORT: '18822' });
    expect(ops.targets('api')).toEqual([{ targets: ['127.0.0.1:18822'] }]);
  });

  it('rewrites the target files alone (`targets`), refusing a malformed list and keeping the last good one', {
    timeout: 120_000,
  }, () => {
    const first = prometheusSh('config', { PROMETHEUS_API_TARGETS: '127.0.0.1:18830' });
    expect(first.run.status, first.run.stderr).toBe(0);
    const config = first.read('prometheus.yml');
    const later = prometheusSh(
      'targets',
      { PROMETHEUS_API_TARGETS: '127.0.0.1:18830,127.0.0.1:18831' },
      first.dir,
    );
    expect(later.run.status, later.run.stderr).toBe(0);
    expect(first.targets('api')).toEqual([{ targets: ['127.0.0.1:18830', '127.0.0.1:18831'] }]);
    expect(first.read('prometheus.yml')).toBe(config);
    for (const bad of ['127.0.0.1', 'http://127.0.0.1:1', ',', "a:1'"]) {
      const refused = prometheusSh('targets', { PROMETHEUS_API_TARGETS: bad }, first.dir);
      expect(refused.run.status, bad).not.toBe(0);
      expect(refused.run.stderr, bad).toMatch(/scrape target/);
    }
    expect(first.targets('api')).toEqual([{ targets: ['127.0.0.1:18830', '127.0.0.1:18831'] }]);
  });
});
