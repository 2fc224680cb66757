import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startHealthServer } from '../../consumers/health-server.js';
import { type Harness, startHarness } from '../integration/support/consumer-harness.js';
import { testLogger, waitFor } from '../support/stack.js';
import { type TestApi, testApi } from '../support-api/api-harness.js';

// The demo's Prometheus (infra/prometheus.sh, what `npm run demo` starts), pointed at an API and
// a consumer process a test runs, with its config and data in a directory of its own.

const root = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

interface Target {
  labels: { job: string; instance: string };
  health: string;
}

export interface DemoPrometheus {
  readonly url: string;
  /** The `data` of a GET on Prometheus's HTTP API. */
  api<T>(path: string): Promise<T>;
  /** Waits until every target listed was scraped and is up (an API and a consumer process
   * unless `scrapeApis` listed more); their jobs, sorted. */
  targetsUp(): Promise<string[]>;
  /** Lists these API ports as the job `api`'s targets (`infra/prometheus.sh targets`), live. */
  scrapeApis(ports: number[]): Promise<void>;
  /** Every target up, as `job instance`, sorted. */
  targetsUpByInstance(): Promise<string[]>;
  stop(): Promise<void>;
}

export async function startDemoPrometheus(targets: {
  apiPort: number;
  consumerHealthPort: number;
}): Promise<DemoPrometheus> {
  const port = await freePort();
  const dir = mkdtempSync(`${root}.local/prometheus-test-`);
  const env = {
    ...process.env,
    // Named, not taken from API_PORT / API_OPS_PORT: the test's own processes, whatever the shell has.
    PROMETHEUS_API_TARGETS: `127.0.0.1:${targets.apiPort}`,
    PROMETHEUS_CONSUMER_TARGETS: `127.0.0.1:${targets.consumerHealthPort}`,
    PROMETHEUS_PORT: String(port),
    PROMETHEUS_DIR: dir,
    // The test waits for a few scrapes and evaluations, not the demo's 5 s each.
    PROMETHEUS_SCRAPE_INTERVAL: '1s',
  };
  const script = `${root}infra/prometheus.sh`;
  await run('bash', [script, 'start'], { env });
  const url = `http://127.0.0.1:${port}`;
  async function api<T>(path: string): Promise<T> {
    const res = await fetch(`${url}/api/v1/${path}`);
    const body = (await res.json()) as { status: string; data: T };
    if (body.status !== 'success') throw new Error(`${path}: ${JSON.stringify(body)}`);
    return body.data;
  }
  let expected = 2;
  const upTargets = () =>
    waitFor(`${expected} targets scraped and up`, async () => {
      const { activeTargets } = await api<{ activeTargets: Target[] }>('targets');
      return activeTargets.length === expected && activeTargets.every((t) => t.health === 'up')
        ? activeTargets
        : undefined;
    });
  return {
    url,
    api,
    targetsUp: async () => (await upTargets()).map((t) => t.labels.job).sort(),
    targetsUpByInstance: async () =>
      (await upTargets()).map((t) => `${t.labels.job} ${t.labels.instance}`).sort(),
    async scrapeApis(ports) {
      const list = ports.map((p) => `127.0.0.1:${p}`).join(',');
      await run('bash', [script, 'targets'], { env: { ...env, PROMETHEUS_API_TARGETS: list } });
      expected = ports.length + 1;
    },
    async stop() {
      await run('bash', [script, 'stop'], { env });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/** An API and a consumer process of the test's own, on the shared stack, scraped by the demo's Prometheus. */
export interface ObservedSystem {
  readonly api: TestApi;
  readonly consumers: Harness;
  readonly prometheus: DemoPrometheus;
  stop(): Promise<void>;
}

export async function startObservedSystem(): Promise<ObservedSystem> {
  const api = testApi();
  const consumers = await startHarness('prom');
  const health = await startHealthServer({
    port: 0,
    registry: consumers.app.metrics,
    isReady: () => consumers.app.isReady(),
    logger: testLogger,
  });
  await api.ready();
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  const apiPort = (api.app.server.address() as AddressInfo).port;
  const prometheus = await startDemoPrometheus({ apiPort, consumerHealthPort: health.port });
  return {
    api,
    consumers,
    prometheus,
    async stop() {
      await prometheus.stop();
      await health.close();
      await consumers.stop();
      await api.close();
    },
  };
}
