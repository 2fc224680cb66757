import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSeeder, type Seeder } from '../../tools/seed/read-model-seed.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { recordFigures } from '../support/figures.js';
import { waitFor } from '../support/stack.js';
import { type ThrowawayRedis, throwawayRedis } from '../support/throwaway-redis.js';
import { type TestApi, testApi } from '../support-api/api-harness.js';

// API_REDIS_READ_REPLICAS beside a single Redis (API_REDIS_REPLICA_URL): the reads nothing keeps
// go to the replica; key statuses and what the near-cache keeps come from the master, so a
// revoked key is refused as promptly as without a replica. A master and a replica of the file's
// own: the suite's Redis has no replica.

const calls = async (redis: Redis, command: string): Promise<number> => {
  const stats = await redis.info('commandstats');
  return Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
};

describe('reads from a replica', () => {
  let master: ThrowawayRedis;
  let replica: ThrowawayRedis;
  let toMaster: Redis;
  let toReplica: Redis;
  let seed: Seeder;
  const apis: TestApi[] = [];
  const key = newApiKey();
  const nowMs = Date.now();

  const start = (env: Record<string, string>) => {
    // Every API on the first one's prefix, where the data is seeded.
    const shared: Record<string, string> = apis[0] ? { REDIS_KEY_PREFIX: apis[0].prefix } : {};
    const api = testApi({
      redisUrl: master.url,
      env: {
        API_REDIS_READ_REPLICAS: 'true',
        API_REDIS_REPLICA_URL: replica.url,
        ...shared,
        ...env,
      },
    });
    apis.push(api);
    return api;
  };
  const flow = (api: TestApi, apiKey = key) =>
    api.app.inject({
      method: 'GET',
      url: `${api.config.api.basePath}/getInstallationCurrentEnergyFlow?installationId=1`,
      headers: { 'api-key': apiKey },
    });
  /** The replica has applied everything the master acknowledged so far. */
  const replicated = async () => {
    expect(await toMaster.call('WAIT', '1', '5000')).toBe(1);
  };

  beforeAll(async () => {
    [master, replica] = await Promise.all([throwawayRedis(), throwawayRedis()]);
    await Promise.all([master.start(), replica.start()]);
    toMaster = new Redis(master.url, { maxRetriesPerRequest: 0 });
    toReplica = new Redis(replica.url, { maxRetriesPerRequest: 0 });
    await toReplica.call('REPLICAOF', '127.0.0.1', String(master.port));
    await waitFor('the replica in sync', async () =>
      (await toReplica.info('replication')).includes('master_link_status:up') ? true : undefined,
    );
    const first = start({ API_NEAR_CACHE_ENTRIES: '0' });
    seed = createSeeder(toMaster, first.prefix);
    await seed.installation(installation(1));
    await seed.devices(
      1,
      [{ category: 'inverter', record: device('inverter', 11, 1, nowMs - 1_000, { powerAc: 5 }) }],
      nowMs,
      first.config.ingest.onlineWindowSeconds,
    );
    await seed.liveKey(key, { app: 1, installations: [installation(1)] });
    await replicated();
  });
  afterAll(async () => {
    for (const api of apis) await api.close();
    toMaster?.disconnect();
    toReplica?.disconnect();
    await Promise.all([master?.stop(), replica?.stop()]);
  });

  it('answers from the replica, the key judged on the master', async () => {
    const api = apis[0] as TestApi;
    await api.ready();
    // Until its connection to the replica is up, the API reads the master: wait for that.
    const scripts = async (redis: Redis) =>
      (await calls(redis, 'evalsha')) + (await calls(redis, 'eval'));
    await waitFor('reads on the replica', async () => {
      const before = await scripts(toReplica);
      await flow(api);
      return (await scripts(toReplica)) > before ? true : undefined;
    });
    const [masterBefore, replicaBefore] = [await scripts(toMaster), await scripts(toReplica)];
    for (let i = 0; i < 20; i++) expect((await flow(api)).statusCode).toBe(200);
    // Each read is one script on the replica; none reached the master.
    expect((await scripts(toReplica)) - replicaBefore).toBeGreaterThanOrEqual(20);
    expect((await scripts(toMaster)) - masterBefore).toBe(0);

    // A change reaches the answers once replicated: the staleness replicas add.
    const before = (await flow(api)).body;
    const since = Date.now();
    await seed.devices(
      1,
      [{ category: 'inverter', record: device('inverter', 11, 1, Date.now(), { powerAc: 9 }) }],
      Date.now(),
      api.config.ingest.onlineWindowSeconds,
    );
    await waitFor('the change served', async () =>
      (await flow(api)).body !== before ? true : undefined,
    );
    recordFigures(
      'api-replica-reads',
      `write on the master -> served from the replica ${Date.now() - since} ms`,
    );
  });

  it('keeps the near-cache and revocation as prompt as on the master', async () => {
    const api = start({});
    await api.ready();
    expect((await flow(api)).statusCode).toBe(200);
    // Revoked on the master: the key's status is read there, on its announcement.
    await seed.revokeKey(key);
    await waitFor('the key refused', async () =>
      (await flow(api)).statusCode === 401 ? true : undefined,
    );
    await replicated();
    expect((await flow(apis[0] as TestApi)).statusCode).toBe(401);
  });

  it('refuses the setting on a single Redis without a replica URL', () => {
    expect(() =>
      testApi({ redisUrl: 'redis://127.0.0.1:1', env: { API_REDIS_READ_REPLICAS: 'true' } }),
    ).toThrow(/API_REDIS_REPLICA_URL/);
  });
});
