import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReadApiClient } from '../../clients/typescript/src/index.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { testApi } from '../support-api/api-harness.js';
import { recordingFetch } from './support/client-recorder.js';

// The official client's bulk call against the real API: 260 readable ids and 5 unknown ones, in
// any order with repeats, cost 3 bulk requests of at most 100 ids; a second poll costs 304s.
describe('client: bulk energy flow over 250 ids', () => {
  const api = testApi();
  const key = newApiKey();
  const readable = Array.from({ length: 260 }, (_, i) => 5_000 + i);
  const unknown = [9_001, 9_002, 9_003, 9_004, 9_005];
  const seenMs = Math.floor(Date.now() / 1000) * 1000 + 30_000;
  let origin = '';

  beforeAll(async () => {
    await api.ready();
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    for (const id of readable) await api.seed.installation(installation(id));
    await api.seed.liveKey(key, { app: 44, installations: readable.map((id) => installation(id)) });
    // Every tenth installation has an online battery; the others have no flow (data null).
    for (const id of readable.filter((_, i) => i % 10 === 0)) {
      await api.seed.devices(
        id,
        [{ category: 'battery', record: device('battery', id, id, seenMs - id, { soe: 20 }) }],
        Date.now(),
        api.config.ingest.onlineWindowSeconds,
      );
    }
  }, 60_000);
  afterAll(() => api.close());

  it('chunks the ids by 100 onto the bulk endpoint and merges the answers in order', async () => {
    const recorder = recordingFetch();
    const client = createReadApiClient({
      baseUrl: `${origin}${api.config.api.basePath}`,
      apiKey: key,
      fetch: recorder.fetch,
    });
    const ids = [...unknown, ...[...readable].reverse(), ...readable.slice(0, 10)];
    const result = await client.getEnergyFlows(ids);
    expect(result.flows.map((f) => f.installationId)).toEqual(readable);
    expect(result.notFound).toEqual(unknown);
    expect(result.flows.filter((f) => f.data !== null)).toHaveLength(26);
    expect(result.flows[0]?.data?.batterySoe).toBe(20);
    // Data age: the latest lastUpdated of all flows, the first installation's battery.
    expect(result.lastModified?.getTime()).toBe(seenMs - 5_000);
    expect(result.newestLastModified).toEqual(result.lastModified);
    // The oldest battery (id 5250) was seen 5.25 s before the newest; stored in whole seconds.
    expect(result.oldestLastModified?.getTime()).toBe(seenMs - 6_000);
    expect(result.offline).toHaveLength(260 - 26);
    expect(result).toMatchObject({ requests: 3, notModified: 0 });
    // Chunks go out concurrently: the order they complete in is not fixed.
    const sizes = recorder.calls.map(
      (c) => new URL(c.url).searchParams.get('installationIds')?.split(',').length ?? 0,
    );
    expect(sizes.sort((a, b) => b - a)).toEqual([100, 100, 65]);
    expect(recorder.calls.every((c) => c.url.includes('/getInstallationsCurrentEnergyFlow?'))).toBe(
      true,
    );

    const again = await client.getEnergyFlows(ids);
    expect(again).toMatchObject({ requests: 3, notModified: 3 });
    expect(again.flows).toEqual(result.flows);
    expect(again.lastModified).toEqual(result.lastModified);
    expect(again.oldestLastModified).toEqual(result.oldestLastModified);
    expect(recorder.calls.slice(3).map((c) => c.status)).toEqual([304, 304, 304]);
  });
});

// One live installation beside a stale one and one with no device online: the newest data age
// (`lastModified`, 1.0's only one) looks live; `oldestLastModified` and `offline` do not hide the
// other two, on a fresh answer and on a 304 alike.
describe('client: bulk data age with a fresh and a stale installation', () => {
  const api = testApi();
  const key = newApiKey();
  const [fresh, stale, offline] = [6001, 6002, 6003];
  const nowMs = Date.now();
  const freshSeenMs = nowMs - 1_000;
  const staleSeenMs = nowMs - 200_000; // still online: the window is 300 s
  const wholeSecond = (ms: number) => Math.floor(ms / 1000) * 1000;
  let origin = '';

  beforeAll(async () => {
    await api.ready();
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    const ids = [fresh, stale, offline];
    for (const id of ids) await api.seed.installation(installation(id));
    await api.seed.liveKey(key, { app: 60, installations: ids.map((id) => installation(id)) });
    for (const [id, seen] of [
      [fresh, freshSeenMs],
      [stale, staleSeenMs],
    ] as const) {
      await api.seed.devices(
        id,
        [{ category: 'battery', record: device('battery', id, id, seen, { soe: 50 }) }],
        nowMs,
        api.config.ingest.onlineWindowSeconds,
      );
    }
  });
  afterAll(() => api.close());

  it('reports the stalest installation, and those without data, beside the freshest', async () => {
    const client = createReadApiClient({
      baseUrl: `${origin}${api.config.api.basePath}`,
      apiKey: key,
    });
    for (const expectedNotModified of [0, 1]) {
      const result = await client.getEnergyFlows([offline, stale, fresh]);
      expect(result.notModified).toBe(expectedNotModified);
      expect(result.flows.map((f) => [f.installationId, f.data !== null])).toEqual([
        [fresh, true],
        [stale, true],
        [offline, false],
      ]);
      expect(result.oldestLastModified?.getTime()).toBe(wholeSecond(staleSeenMs));
      expect(result.newestLastModified?.getTime()).toBe(wholeSecond(freshSeenMs));
      expect(result.offline).toEqual([offline]);
      // Kept for 1.0 callers: the newest, which alone would pass this poll for live.
      expect(result.lastModified).toEqual(result.newestLastModified);
    }
  });
});
