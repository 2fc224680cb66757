import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/app.js';
import { createQuotas, FULL_COST } from '../../api/quotas/quota.js';
import { createApiRedis } from '../../api/redis-client.js';
import { createLogger } from '../../src/logger.js';
import { createAccessFactStore } from '../../src/read-model/access-fact-store.js';
import { createKeys, quotaCounterKey } from '../../src/read-model/keys.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { dropPrefix, testRedis, uniqueId, waitFor } from '../support/stack.js';
import { testApi } from '../support-api/api-harness.js';

// beyond.md §6: quotas, off by default; when on, RateLimit headers, 429 with Retry-After,
// counters in Redis shared by replicas, a 304 at a tenth of a request.
describe('API quotas', () => {
  // Ten seconds into a window: 50 s until it ends.
  const nowMs = Date.UTC(2026, 0, 15, 12, 0, 10);
  const windowIndex = Math.floor(nowMs / 60_000);
  const inst = installation(91);
  const flowUrl = (base: string) => `${base}/getInstallationCurrentEnergyFlow?installationId=91`;

  const seeded = async (api: ReturnType<typeof testApi>, keys: Array<[string, number]>) => {
    await api.ready();
    await api.seed.installation(inst);
    await api.seed.devices(
      91,
      [{ category: 'inverter', record: device('inverter', 1, 91, nowMs - 1_000, { powerAc: 5 }) }],
      nowMs,
      api.config.ingest.onlineWindowSeconds,
    );
    for (const [key, app] of keys) await api.seed.liveKey(key, { app, installations: [inst] });
  };

  describe('off by default', () => {
    const api = testApi({ clock: () => nowMs });
    const key = newApiKey();
    beforeAll(() => seeded(api, [[key, 1]]));
    afterAll(() => api.close());

    it('sends no RateLimit header and never 429', async () => {
      for (let i = 0; i < 30; i++) {
        const res = await api.app.inject({
          url: flowUrl(api.config.api.basePath),
          headers: { 'api-key': key },
        });
        expect(res.statusCode).toBe(200);
        expect(res.headers.ratelimit).toBeUndefined();
        expect(res.headers['ratelimit-policy']).toBeUndefined();
      }
    });
  });

  describe('on', () => {
    const api = testApi({ clock: () => nowMs, env: { API_QUOTA_REQUESTS_PER_MINUTE: '5' } });
    const base = api.config.api.basePath;
    const key = newApiKey();
    const polite = newApiKey();
    const shared = newApiKey();
    const custom = newApiKey();
    const get = (apiKey: string, headers: Record<string, string> = {}, url = flowUrl(base)) =>
      api.app.inject({ url, headers: { 'api-key': apiKey, ...headers } });

    beforeAll(async () => {
      await seeded(api, [
        [key, 11],
        [polite, 12],
        [shared, 13],
        [custom, 14],
      ]);
      // Application 14 gets an override of 2 requests per minute, through the fact store.
      const conn = testRedis();
      try {
        await createAccessFactStore({ conn, keys: api.seed.keys }).applyAll([
          {
            type: 'application.upserted',
            occurredAt: new Date().toISOString(),
            applicationId: 14,
            owner: { type: 'user', id: 1_000_014 },
            enabled: true,
            requestsPerMinute: 2,
          },
        ]);
      } finally {
        conn.disconnect();
      }
    });
    afterAll(() => api.close());

    it('counts every authenticated answer and refuses the one over budget with 429', async () => {
      const seen: string[] = [];
      for (let i = 0; i < 5; i++) {
        // A 404 and a 400 of a live key count like a 200.
        const url =
          i === 1
            ? `${base}/getInstallationDevices?installationId=404404`
            : i === 2
              ? `${base}/getInstallationDevices`
              : flowUrl(base);
        const res = await get(key, {}, url);
        expect(res.statusCode).toBe([200, 404, 400, 200, 200][i]);
        expect(res.headers['ratelimit-policy']).toBe('"default";q=5;w=60');
        seen.push(res.headers.ratelimit as string);
      }
      expect(seen).toEqual([4, 3, 2, 1, 0].map((r) => `"default";r=${r};t=50`));
      const refused = await get(key);
      expect(refused.statusCode).toBe(429);
      expect(refused.body).toBe('{"valid":false,"error":"RATE_LIMITED"}');
      expect(refused.headers['retry-after']).toBe('50');
      expect(refused.headers.ratelimit).toBe('"default";r=0;t=50');
      // Operators see which application is over budget (ops/prometheus: ApiQuotaRefusals).
      const metrics = await api.app.inject({ url: '/metrics' });
      expect(metrics.body).toContain('api_quota_refusals_total{application="11"} 1\n');
      // Unauthenticated requests are not charged and get no RateLimit headers.
      const anonymous = await get(newApiKey());
      expect(anonymous.statusCode).toBe(401);
      expect(anonymous.headers.ratelimit).toBeUndefined();
      // The counter lives in the application's slot.
      const counter = await testRedis().get(quotaCounterKey(api.seed.keys, 11, windowIndex));
      expect(counter).toBe('50');
      expect(quotaCounterKey(api.seed.keys, 11, windowIndex)).toContain('{a11}');
    });

    it('charges a 304 a tenth of a request', async () => {
      const first = await get(polite);
      const tag = first.headers.etag as string;
      let notModified = 0;
      for (;;) {
        const res = await get(polite, { 'if-none-match': tag });
        if (res.statusCode !== 304) {
          expect(res.statusCode).toBe(429);
          break;
        }
        notModified++;
      }
      // 5 requests: one 200, then 4 requests' worth of 304s at a tenth each.
      expect(notModified).toBe(40);
    });

    it('shares one budget between replicas through Redis', async () => {
      const logger = createLogger({ level: 'silent', name: 'api' });
      const redis = createApiRedis(api.config.redis, 1_000);
      const replica = buildApi({ config: api.config, logger, redis, clock: () => nowMs });
      // The API's connection refuses commands until it is up.
      if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
      try {
        const statuses: number[] = [];
        for (let i = 0; i < 8; i++) {
          const app = i % 2 === 0 ? api.app : replica;
          statuses.push(
            (await app.inject({ url: flowUrl(base), headers: { 'api-key': shared } })).statusCode,
          );
        }
        expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429, 429]);
        expect(statuses.slice(5)).toEqual([429, 429, 429]);
      } finally {
        await replica.close();
        redis.disconnect();
      }
    });

    it('takes the per-application override from application.upserted', async () => {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await get(custom);
        statuses.push(res.statusCode);
        expect(res.headers['ratelimit-policy']).toBe('"default";q=2;w=60');
      }
      expect(statuses).toEqual([200, 200, 429]);
    });
  });

  describe('leasing ahead', () => {
    it('leases the next slice while half of the current one is left: a busy application never waits for Redis', async () => {
      const redis = testRedis();
      const prefix = `${uniqueId('quota-ahead')}:`;
      const keys = createKeys(prefix);
      const keyHash = 'a'.repeat(64);
      await redis.hset(keys.keyStatus(keyHash), 'app', '7');
      // 1,000,000 a minute: slices of 200 requests, five of them spent below.
      const quotas = createQuotas({ redis, keys, requestsPerMinute: 1_000_000 });
      try {
        // A window's first slice is leased when the first request needs it.
        const first = quotas.charge(keyHash, FULL_COST, nowMs);
        expect(first).toBeInstanceOf(Promise);
        expect((await first).allowed).toBe(true);
        const leased = async () => Number(await redis.get(quotaCounterKey(keys, 7, windowIndex)));
        const SLICE = 2_000;
        let waited = 0;
        for (let i = 1; i < 1_000; i++) {
          const verdict = quotas.charge(keyHash, FULL_COST, nowMs);
          if (verdict instanceof Promise) waited++;
          expect((await verdict).allowed).toBe(true);
          // Past half of a slice the next one is being leased: Redis answers it, as it does
          // between a busy replica's requests, before this slice runs out.
          if (i % 200 === 150) {
            const next = (Math.floor(i / 200) + 2) * SLICE;
            await waitFor('the next slice leased ahead', async () =>
              (await leased()) >= next ? true : undefined,
            );
            // Its reply, on the leases' own connection, may not have been read yet.
            await quotas.settled();
          }
        }
        expect(waited).toBe(0);
        // Leased: every request spent, and less than a slice and a half ahead of them.
        expect(await leased()).toBeGreaterThanOrEqual(1_000 * FULL_COST);
        expect(await leased()).toBeLessThan(1_000 * FULL_COST + 1.5 * SLICE);
      } finally {
        await quotas.close();
        await dropPrefix(redis, prefix);
        redis.disconnect();
      }
    });
  });
});
