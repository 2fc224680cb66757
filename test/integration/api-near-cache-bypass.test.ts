import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampled } from '../../api/near-cache/worth.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { waitFor } from '../support/stack.js';
import { refusedWithin } from '../support-api/access-ends.js';
import { testApi } from '../support-api/api-harness.js';

// Issue 55: a near-cache that does not pay steps out of the way (api/near-cache/worth.ts). A
// poll wider than the cache, each installation read once a round, hits nothing: the cache goes
// out of the way, and a sampled share of installations keeps the whole path. Reads answer the
// same, every change is served and access ends within 1 s, cached or not. A hot set then shows
// reuse in the sample, and the cache comes back whole.

const ENTRIES = 64;
const WINDOW = 256;
const FLEET = 1_200;

describe('API near-cache out of the way', () => {
  const api = testApi({
    env: {
      API_NEAR_CACHE_ENTRIES: String(ENTRIES),
      API_NEAR_CACHE_WINDOW_LOOKUPS: String(WINDOW),
    },
  });
  const base = api.config.api.basePath;
  const window = api.config.ingest.onlineWindowSeconds;
  const key = newApiKey();
  const ids = Array.from({ length: FLEET }, (_, i) => 20_000 + i);
  const flowPath = (id: number) => `${base}/getInstallationCurrentEnergyFlow?installationId=${id}`;
  const get = (id: number, apiKey = key) =>
    api.app.inject({ url: flowPath(id), headers: { 'api-key': apiKey } });
  const metrics = async () => (await api.app.inject({ url: '/metrics' })).body;
  const metric = async (pattern: RegExp) => Number(pattern.exec(await metrics())?.[1]);
  const bypass = () => metric(/^api_near_cache_bypass (\d+)/m);
  const bypassed = () => metric(/^api_near_cache_lookups_total\{result="bypassed"\} (\d+)/m);
  const soe = (id: number) => 10 + (id % 80);
  const battery = (id: number, value: number) => {
    const nowMs = Date.now();
    return api.seed.devices(
      id,
      [
        {
          category: 'battery',
          record: device('battery', id, id, nowMs, { soe: value, powerDc: 10 }),
        },
      ],
      nowMs,
      window,
    );
  };
  /** One round over the whole fleet, checking every answer. */
  const sweep = async () => {
    for (let i = 0; i < ids.length; i += 50) {
      const batch = ids.slice(i, i + 50);
      const answers = await Promise.all(batch.map((id) => get(id)));
      answers.forEach((res, j) => {
        expect(res.statusCode).toBe(200);
        expect(res.json().data.batterySoe).toBe(soe(batch[j] as number));
      });
    }
  };

  beforeAll(async () => {
    await api.ready();
    const records = ids.map((id) => installation(id));
    for (const record of records) await api.seed.installation(record);
    for (const id of ids) await battery(id, soe(id));
    await api.seed.liveKey(key, { app: 1, installations: records });
  }, 120_000);
  afterAll(() => api.close());

  it('steps out of the way on a poll wider than the cache, answering the same', async () => {
    expect(await bypass()).toBe(0);
    // A round is FLEET lookups, more than four windows: the poll's hit ratio is judged in it.
    for (let round = 0; round < 3 && (await bypass()) === 0; round++) await sweep();
    expect(await bypass()).toBe(1);
    const before = await bypassed();
    await sweep();
    // Out of the way but for the sample: about 15 in 16 reads skip the cache.
    const skipped = (await bypassed()) - before;
    const outside = ids.filter((id) => !sampled(id)).length;
    expect(skipped).toBe(outside);
    expect(await metric(/^api_near_cache_entries (\d+)/m)).toBeLessThanOrEqual(ENTRIES / 16);
  });

  it('serves every change and ends access within 1 s while out of the way', async () => {
    expect(await bypass()).toBe(1);
    const inSample = ids.find(sampled) as number;
    const outside = ids.find((id) => !sampled(id)) as number;
    for (const id of [inSample, outside]) {
      await battery(id, 99);
      await waitFor(`${id} changed`, async () =>
        (await get(id)).json().data.batterySoe === 99 ? true : undefined,
      );
      await battery(id, soe(id));
    }
    const other = newApiKey();
    await api.seed.liveKey(other, {
      app: 2,
      installations: [installation(inSample), installation(outside)],
    });
    for (const id of [inSample, outside]) expect((await get(id, other)).statusCode).toBe(200);
    await api.seed.revokeKey(other);
    for (const id of [inSample, outside])
      await refusedWithin(
        `revoked, ${id}`,
        Date.now(),
        async () => (await get(id, other)).statusCode,
        401,
      );
  });

  it('comes back whole when the sample shows reuse', async () => {
    expect(await bypass()).toBe(1);
    // A hot set, half in the sample: read over and over, it repays keeping.
    const hot = [
      ...ids.filter(sampled).slice(0, 8),
      ...ids.filter((id) => !sampled(id)).slice(0, 8),
    ];
    await waitFor('back', async () => {
      for (let i = 0; i < 20; i++) await Promise.all(hot.map((id) => get(id)));
      return (await bypass()) === 0 ? true : undefined;
    });
    const hits = /^api_near_cache_lookups_total\{result="hit"\} (\d+)/m;
    const before = await metric(hits);
    const skippedBefore = await bypassed();
    await waitFor('the hot set from memory', async () => {
      for (let i = 0; i < 5; i++) await Promise.all(hot.map((id) => get(id)));
      return (await metric(hits)) - before >= 5 * hot.length ? true : undefined;
    });
    expect(await bypassed()).toBe(skippedBefore);
    for (const id of hot) expect((await get(id)).json().data.batterySoe).toBe(soe(id));
    expect(await metric(/^api_near_cache_steps_total\{step="out"\} (\d+)/m)).toBe(1);
    expect(await metric(/^api_near_cache_steps_total\{step="back"\} (\d+)/m)).toBe(1);
  });
});
