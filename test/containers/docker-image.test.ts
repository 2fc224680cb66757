import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Producer } from '../../consumers/kafka/client.js';
import { type Config, loadConfig } from '../../src/config.js';
import { installation, newApiKey } from '../../tools/seed/records.js';
import {
  apiKeyCreated,
  applicationUpserted,
  deviceState,
  grant,
  installationUpserted,
} from '../e2e/support/events.js';
import { TEST_LABEL } from '../setup/container-engine.js';
import { compose } from '../support/compose.js';
import { freePort } from '../support/free-port.js';
import {
  dropPrefix,
  isolatedEnv,
  testKafkaClient,
  testRedis,
  uniqueId,
  waitFor,
} from '../support/stack.js';

// The Dockerfile's image, built here, running the compose services' own commands (topics,
// consumers, api: compiled code, no tsx) on host networking against the test stack: telemetry
// in, the three endpoints answer. Runs with TEST_STACK=containers, which provides the container
// engine.

const engine = inject('containerEngine');
const root = fileURLToPath(new URL('../../', import.meta.url));
const services = compose().services;

function buildImage(): string {
  if (!engine)
    throw new Error('test/containers needs TEST_STACK=containers (npm run test:containers)');
  const image = engine.podman
    ? 'localhost/installation-telemetry-read-model:local'
    : 'installation-telemetry-read-model:local';
  // Podman: on the local Node 24 stand-in, no registry. A Docker host: the official node image.
  const [cmd, args] = engine.podman
    ? ['bash', ['infra/containers/build-images.sh', 'app']]
    : ['docker', ['build', '-t', image, '.']];
  const built = spawnSync(cmd, args, {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, ...engine.env, APP_IMAGE: image },
  });
  if (built.status !== 0)
    throw new Error(`building the Dockerfile failed: ${cmd} ${args.join(' ')}`);
  return image;
}

describe('the Docker image runs the compose services', () => {
  const id = uniqueId('image');
  const started: StartedTestContainer[] = [];
  let config: Config;
  let env: Record<string, string>;
  let producer: Producer;
  let apiOrigin: string;
  const key = newApiKey();
  let image: string;

  beforeAll(async () => {
    image = buildImage();
    Object.assign(process.env, engine?.env);
    const { GenericContainer, Wait } = await import('testcontainers');
    const [apiPort, healthPort] = [await freePort(), await freePort()];
    env = {
      ...isolatedEnv(id),
      LOG_LEVEL: 'warn',
      API_HOST: '127.0.0.1', // host networking: loopback, not compose's 0.0.0.0
      API_PORT: String(apiPort),
      CONSUMER_HEALTH_PORT: String(healthPort),
    };
    config = loadConfig(env);
    apiOrigin = `http://127.0.0.1:${apiPort}`;
    const logs: string[] = [];
    const run = async (service: string, oneShot = false) => {
      const s = services[service];
      if (!s?.command) throw new Error(`docker-compose.yml: service ${service} has no command`);
      const container = new GenericContainer(image)
        .withNetworkMode('host')
        .withLabels({ [TEST_LABEL]: 'app', [`${TEST_LABEL}.run`]: id })
        .withEnvironment(env)
        .withCommand(s.command)
        .withLogConsumer((stream) => stream.on('data', (line) => logs.push(`${service}: ${line}`)));
      try {
        return await (oneShot
          ? container.withWaitStrategy(Wait.forOneShotStartup())
          : container
        ).start();
      } catch (error) {
        throw new Error(
          `${service} failed (${String(error)}); its output:\n${logs.join('').slice(-4000)}`,
        );
      }
    };
    // Compose's order: topics to completion, then consumers and api.
    await (await run('topics', true)).stop();
    for (const service of ['consumers', 'api']) started.push(await run(service));
    try {
      await waitFor(
        'consumers ready',
        async () => ((await fetch(`http://127.0.0.1:${healthPort}/readyz`)).ok ? true : undefined),
        60_000,
      );
      await waitFor(
        'api ready',
        async () => ((await fetch(`${apiOrigin}/readyz`)).ok ? true : undefined),
        60_000,
      );
    } catch (error) {
      throw new Error(`${String(error)}; the containers' output:\n${logs.join('').slice(-4000)}`);
    }

    producer = testKafkaClient().createProducer();
    await producer.connect();
    const send = async (topic: string, k: { key: string; event: unknown }) =>
      producer.send(topic, [{ key: k.key, value: JSON.stringify(k.event) }]);
    await send(config.topics.installations, installationUpserted(installation(701), 7));
    for (const k of [
      applicationUpserted(70, { type: 'company', id: 7 }),
      apiKeyCreated('img', 70, key),
      grant(true, 70, 701),
    ]) {
      await send(config.topics.access, k);
    }
    const now = Date.now() - 1_000;
    await send(
      config.topics.telemetry,
      deviceState(701, 'inverter', 1, now, { powerAc: 2000, powerDcPvTotal: 2400, status: 4 }),
    );
    await send(
      config.topics.telemetry,
      deviceState(701, 'energyMeter', 2, now, { powerAc: 500, options: '' }),
    );
  }, 600_000);

  afterAll(async () => {
    await producer?.disconnect();
    // Stopped also when a test failed; the global teardown removes anything left by label.
    await Promise.allSettled(started.map((c) => c.stop({ timeout: 10_000 })));
    const redis = testRedis();
    await dropPrefix(redis, env.REDIS_KEY_PREFIX ?? `${id}:`);
    redis.disconnect();
  }, 60_000);

  const get = async (path: string) => {
    const res = await fetch(`${apiOrigin}${config.api.basePath}${path}`, {
      headers: { 'api-key': key },
    });
    // biome-ignore lint/suspicious/noExplicitAny: the e2e suite checks the bodies against the OpenAPI
    const body: any = await res.json();
    return { status: res.status, body };
  };

  it('holds production dependencies only: neither tsx nor TypeScript can be loaded', async () => {
    const { GenericContainer, Wait } = await import('testcontainers');
    // Exits 1 when either package loads; a one-shot start fails on a non-zero exit.
    const probe = `Promise.allSettled(['tsx', 'typescript'].map((p) => import(p))).then((r) =>
      process.exit(r.some((x) => x.status === 'fulfilled') ? 1 : 0))`;
    const container = await new GenericContainer(image)
      .withNetworkMode('host')
      .withLabels({ [TEST_LABEL]: 'app', [`${TEST_LABEL}.run`]: id })
      .withCommand(['node', '-e', probe])
      .withWaitStrategy(Wait.forOneShotStartup())
      .start();
    await container.stop();
  });

  it("runs the services on jemalloc, which gives back what glibc's malloc would keep", async () => {
    // docs/reliability.md, "Memory after load": the image preloads it; a process without it
    // (a lost LD_PRELOAD, a missing library) would fail here, not in production after a load.
    for (const container of started) {
      const maps = await container.exec(['sh', '-c', 'grep -c libjemalloc /proc/1/maps']);
      expect(maps.exitCode, maps.output).toBe(0);
      expect(Number(maps.output.trim())).toBeGreaterThan(0);
    }
  });

  it('serves the installation, its devices and its energy flow from produced events', async () => {
    const list = await waitFor(
      'installation served',
      async () => {
        const r = await get('/getInstallations');
        return r.status === 200 && r.body.installations?.length === 1 ? r.body : undefined;
      },
      30_000,
    );
    expect(list.installations[0]).toMatchObject({ id: 701, name: 'Installation 701' });

    const devices = await waitFor(
      'devices served',
      async () => {
        const r = await get('/getInstallationDevices?installationId=701');
        return r.status === 200 &&
          r.body.inverters?.length === 1 &&
          r.body.energyMeters?.length === 1
          ? r.body
          : undefined;
      },
      30_000,
    );
    expect(devices.inverters[0].status).toEqual({ rawValue: 4, name: 'MPPT' });

    const flow = await waitFor(
      'flow served',
      async () => {
        const r = await get('/getInstallationCurrentEnergyFlow?installationId=701');
        return r.status === 200 && r.body.data?.gridPower === -500 ? r.body : undefined;
      },
      30_000,
    );
    expect(flow.data).toMatchObject({ inverterPower: 2000, solarPower: 2400, gridPower: -500 });
  });
});
