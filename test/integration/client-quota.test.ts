import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReadApiClient, isApiError } from '../../clients/typescript/src/index.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { testApi } from '../support-api/api-harness.js';
import { recordingFetch } from './support/client-recorder.js';

// The official client under the API's quotas (docs/api.md "Quotas"): it spaces its requests by
// the RateLimit headers so that it is never refused in steady state, and when refused (someone
// else spent the budget) it waits Retry-After, once, instead of retrying into more 429s.
describe('client: quotas', () => {
  // The API's clock runs ahead of the wall clock by `offset`; each test puts it where it needs it
  // in a quota window of its own (windows are aligned to the minute), whatever ran before.
  let offset = 0;
  const api = testApi({
    clock: () => Date.now() + offset,
    // The clock moves minutes ahead: the device stays online all along.
    env: { API_QUOTA_REQUESTS_PER_MINUTE: '10', ONLINE_WINDOW_SECONDS: '3600' },
  });
  const base = api.config.api.basePath;
  const id = 4201;
  let origin = '';
  let nextApp = 420;

  /** Moves the API's clock forward to `msIntoWindow` of the next quota window. */
  const clockAt = (msIntoWindow: number) => {
    const now = Date.now() + offset;
    const target = (Math.floor(now / 60_000) + 1) * 60_000 + msIntoWindow;
    offset += target - now;
  };
  /** 3.5 s before a window ends: a test sees a reset in seconds. */
  const endOfWindowSoon = () => clockAt(56_500);
  const liveKey = async () => {
    const key = newApiKey();
    const app = nextApp++;
    await api.seed.liveKey(key, { app, installations: [installation(id)] });
    return { key, app };
  };
  const refusals = async (app: number) => {
    const metrics = await api.app.inject({ url: '/metrics' });
    const line = metrics.body
      .split('\n')
      .find((l) => l.startsWith(`api_quota_refusals_total{application="${app}"}`));
    return line === undefined ? 0 : Number(line.split(' ').at(-1));
  };
  const client = (key: string, recorder: ReturnType<typeof recordingFetch>, cache = true) =>
    createReadApiClient({
      baseUrl: `${origin}${base}`,
      apiKey: key,
      fetch: recorder.fetch,
      cache: cache ? {} : false,
    });

  beforeAll(async () => {
    await api.ready();
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    await api.seed.installation(installation(id));
    const seen = Date.now() + 30_000;
    await api.seed.devices(
      id,
      [{ category: 'battery', record: device('battery', id, id, seen, { soe: 40, powerDc: 1 }) }],
      Date.now(),
      api.config.ingest.onlineWindowSeconds,
    );
  });
  afterAll(() => api.close());

  it('stays under a budget of 10 a minute that a naive loop overruns', async () => {
    const polite = await liveKey();
    const naive = await liveKey();
    endOfWindowSoon();
    // Every request a full one (no cache): 12 of them need the budget of two windows.
    const recorder = recordingFetch();
    const reads = client(polite.key, recorder, false);
    for (let i = 0; i < 12; i++) expect((await reads.getEnergyFlow(id)).status).toBe(200);
    expect(recorder.calls.map((c) => c.status)).toEqual(Array(12).fill(200));
    expect(await refusals(polite.app)).toBe(0);
    expect(reads.rateLimit).toMatchObject({ limit: 10, windowSeconds: 60 });
    // The same 12 reads in a plain loop, in the next window: refused once the 10 are spent.
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await fetch(
        `${origin}${base}/getInstallationCurrentEnergyFlow?installationId=${id}`,
        {
          headers: { 'api-key': naive.key },
        },
      );
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
  });

  it('waits Retry-After when refused, and comes back once', async () => {
    const { key, app } = await liveKey();
    endOfWindowSoon();
    // Another process of the same application spends the whole budget first.
    for (let i = 0; i < 10; i++) {
      const res = await fetch(
        `${origin}${base}/getInstallationCurrentEnergyFlow?installationId=${id}`,
        {
          headers: { 'api-key': key },
        },
      );
      await res.arrayBuffer();
      expect(res.status).toBe(200);
    }
    const recorder = recordingFetch();
    const result = await client(key, recorder).getEnergyFlow(id);
    expect(result.status).toBe(200);
    const [refused, served] = recorder.calls;
    expect(recorder.calls.map((c) => c.status)).toEqual([429, 200]);
    // Retry-After was at most 4 s (the window's end); the client did not come back before it.
    expect((served?.at ?? 0) - (refused?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
    expect(await refusals(app)).toBe(1);
  });

  it('does not start a wait past its deadline: the 429 comes back typed, at once', async () => {
    const { key } = await liveKey();
    clockAt(1_500); // a fresh window with most of its minute left
    for (let i = 0; i < 10; i++) {
      const res = await fetch(
        `${origin}${base}/getInstallationCurrentEnergyFlow?installationId=${id}`,
        {
          headers: { 'api-key': key },
        },
      );
      await res.arrayBuffer();
    }
    const started = Date.now();
    const error = await client(key, recordingFetch())
      .getEnergyFlow(id, { timeoutMs: 2_000 })
      .catch((e: unknown) => e);
    expect(isApiError(error, 'RATE_LIMITED')).toBe(true);
    expect((error as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(2_000);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
