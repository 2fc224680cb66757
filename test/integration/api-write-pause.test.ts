import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSeeder } from '../../tools/seed/read-model-seed.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { type ThrowawayRedis, throwawayRedis } from '../support/throwaway-redis.js';
import { type TestApi, testApi } from '../support-api/api-harness.js';

// Redis pauses writes during a failover (FAILOVER runs CLIENT PAUSE WRITE until the replica
// took over): reads go on. Every API script is read-only to Redis, and a quota lease that cannot
// be written is met from the replica's own count, so every route answers 200 meanwhile. On a
// Redis of the file's own: a pause would stall every other test's writes on the shared one.
describe('API reads while Redis pauses writes', () => {
  let server: ThrowawayRedis;
  let api: TestApi;
  let redis: Redis;
  const inst = installation(1);
  const warmKey = newApiKey();
  const coldKey = newApiKey();

  beforeAll(async () => {
    server = await throwawayRedis();
    await server.start();
    // Near-cache off: every read below runs its script on Redis. Quotas on: every request is
    // charged, and the cold key's application has leased nothing when the pause begins.
    api = testApi({
      redisUrl: server.url,
      env: { API_NEAR_CACHE_ENTRIES: '0', API_QUOTA_REQUESTS_PER_MINUTE: '1000' },
    });
    redis = new Redis(server.url, { maxRetriesPerRequest: 0 });
    const seed = createSeeder(redis, api.prefix);
    await api.ready();
    const nowMs = Date.now();
    await seed.installation(inst);
    await seed.devices(
      1,
      [{ category: 'inverter', record: device('inverter', 11, 1, nowMs - 1_000, { powerAc: 9 }) }],
      nowMs,
      api.config.ingest.onlineWindowSeconds,
    );
    await seed.liveKey(warmKey, { app: 1, installations: [inst] });
    await seed.liveKey(coldKey, { app: 2, installations: [inst] });
  });
  afterAll(async () => {
    await redis?.call('CLIENT', 'UNPAUSE').catch(() => undefined);
    redis?.disconnect();
    await api?.close();
    await server?.stop();
  });

  const base = () => api.config.api.basePath;
  const routes = () => [
    `${base()}/getInstallations`,
    `${base()}/getInstallationDevices?installationId=1`,
    `${base()}/getInstallationCurrentEnergyFlow?installationId=1`,
    `${base()}/getInstallationsCurrentEnergyFlow?installationIds=1`,
  ];
  const get = (url: string, key: string) =>
    api.app.inject({ method: 'GET', url, headers: { 'api-key': key } });

  it('answers every read route with 200 while writes are paused', async () => {
    for (const url of routes()) expect((await get(url, warmKey)).statusCode).toBe(200);
    const before = await Promise.all(routes().map(async (url) => (await get(url, warmKey)).body));

    const writer = new Redis(server.url, { maxRetriesPerRequest: 0 });
    try {
      await redis.call('CLIENT', 'PAUSE', '30000', 'WRITE');
      // A write issued now waits for the pause to end: still waiting after the reads shows
      // they ran inside it.
      let written = false;
      const write = writer.set(`${api.prefix}probe`, '1').then(() => {
        written = true;
      });
      for (const key of [warmKey, coldKey]) {
        for (const [i, url] of routes().entries()) {
          const res = await get(url, key);
          expect(res.statusCode, `${url} with the ${key === warmKey ? 'warm' : 'cold'} key`).toBe(
            200,
          );
          // ETag and data age aside, the same bytes as before the pause.
          expect(res.body).toBe(before[i]);
        }
      }
      expect(written).toBe(false);
      await redis.call('CLIENT', 'UNPAUSE');
      await write;
    } finally {
      writer.disconnect();
    }
  });
});
