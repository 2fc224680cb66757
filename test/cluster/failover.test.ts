import { spawnSync } from 'node:child_process';
import calculateSlot from 'cluster-key-slot';
import { afterAll, describe, expect, it } from 'vitest';
import { isCluster } from '../../src/read-model/redis-connection.js';
import { createSeeder } from '../../tools/seed/read-model-seed.js';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { type Harness, iso, startHarness } from '../integration/support/consumer-harness.js';
import { recordFigures } from '../support/figures.js';
import { waitFor } from '../support/stack.js';
import { type TestApi, testApi } from '../support-api/api-harness.js';

// A Redis Cluster failover under load (`npm run test:failover`: TEST_REDIS=cluster, alone, as it
// takes a master down). Telemetry flows; the master holding an installation is SIGKILLed; its
// replica takes over. Reads resume at once and serve everything acknowledged before the kill:
// the consumers commit a batch's offsets only once one replica of every master they wrote to
// holds its writes (CONSUMER_WAIT_REPLICAS=1). The promoted master has no replica until the
// killed node is back (restarted here as a supervisor would), and until then ingest waits
// rather than acknowledge writes a second failure could lose; then it resumes, and every
// event sent is in the read model.

const INSTALLATIONS = Array.from({ length: 12 }, (_, i) => 910_001 + i);
const ROUNDS_BEFORE = 20;
const ROUNDS_AFTER = 20;

let h: Harness | undefined;
let api: TestApi | undefined;

/** Starts whatever node of the cluster is down: it rejoins as a replica of the promoted one. */
const restartKilledNode = () =>
  spawnSync('bash', ['infra/stack.sh', 'start', 'redis-cluster'], { stdio: 'inherit' }).status;

afterAll(async () => {
  restartKilledNode();
  await api?.close();
  await h?.stop();
});

describe('Redis Cluster failover', () => {
  it('a master SIGKILLed mid-stream: its replica takes over, nothing acknowledged is lost', async () => {
    h = await startHarness('failover', { env: { CONSUMER_WAIT_REPLICAS: '1' } });
    const { redis } = h;
    if (!isCluster(redis)) throw new Error('run with TEST_REDIS=cluster (npm run test:failover)');
    const key = newApiKey();
    const seed = createSeeder(redis, h.config.redis.keyPrefix);
    for (const id of INSTALLATIONS) await seed.installation(installation(id));
    await seed.liveKey(key, { app: 1, installations: INSTALLATIONS.map((id) => installation(id)) });
    api = testApi({ env: { REDIS_KEY_PREFIX: h.config.redis.keyPrefix } });
    await api.ready();
    const soeOf = async (id: number) => {
      const res = await api?.app.inject({
        url: `${api.config.api.basePath}/getInstallationCurrentEnergyFlow?installationId=${id}`,
        headers: { 'api-key': key },
      });
      return res?.statusCode === 200 ? (res.json().data?.batterySoe as number | undefined) : null;
    };

    const start = Date.now();
    const round = async (n: number) => {
      for (const id of INSTALLATIONS)
        await h?.send(h.config.topics.telemetry, String(id), {
          type: 'device.state',
          installationId: id,
          category: 'battery',
          deviceId: id,
          observedAt: iso(start + n * 1_000),
          state: { soe: n, powerDc: 100 },
        });
    };
    for (let n = 1; n <= ROUNDS_BEFORE; n++) await round(n);
    const target = INSTALLATIONS[0] as number;
    const all = async () => Promise.all(INSTALLATIONS.map((id) => soeOf(id)));
    await waitFor('the first rounds acknowledged', async () =>
      (await all()).every((soe) => soe === ROUNDS_BEFORE) ? true : undefined,
    );

    // The master serving the first installation's keys, by its process id.
    const slot = calculateSlot(h.keys.devices(target));
    const [address] = redis.slots[slot] ?? [];
    const master = redis
      .nodes('master')
      .find((n) => `${n.options.host}:${n.options.port}` === address);
    if (!master) throw new Error(`no master known for slot ${slot}`);
    const pid = Number(/process_id:(\d+)/.exec(await master.info('server'))?.[1]);
    process.kill(pid, 'SIGKILL');
    const killedAt = Date.now();

    // Telemetry keeps coming while the cluster notices and promotes the replica.
    for (let n = ROUNDS_BEFORE + 1; n <= ROUNDS_BEFORE + ROUNDS_AFTER; n++) await round(n);
    // Reads of its slot resume on the promoted replica (the API may answer sooner, from its
    // near-cache), with everything acknowledged before the kill.
    const record = await waitFor(
      'the slot served again',
      async () =>
        (await redis.hget(h?.keys.devices(target) ?? '', `battery:${target}`)) ?? undefined,
      30_000,
    );
    const resumedMs = Date.now() - killedAt;
    expect(redis.slots[slot]?.[0]).not.toBe(address);
    expect(JSON.parse(record).soe).toBeGreaterThanOrEqual(ROUNDS_BEFORE);
    // The API's own client learns the new topology on its next failed command: 500 until then.
    const served = await waitFor(
      'the API to answer every installation again',
      async () => {
        const soes = await all();
        return soes.every((soe) => soe !== null) ? soes : undefined;
      },
      30_000,
    );
    const apiResumedMs = Date.now() - killedAt;
    for (const soe of served) expect(soe).toBeGreaterThanOrEqual(ROUNDS_BEFORE);

    expect(restartKilledNode()).toBe(0);
    const last = ROUNDS_BEFORE + ROUNDS_AFTER;
    await waitFor(
      'ingest to resume and reach the newest event everywhere',
      async () => ((await all()).every((soe) => soe === last) ? true : undefined),
      60_000,
    );
    recordFigures(
      'failover',
      `failover: the slot served ${resumedMs} ms after the SIGKILL, the API ${apiResumedMs} ms; every event in the model ${Date.now() - killedAt} ms after it`,
    );
  }, 120_000);
});
