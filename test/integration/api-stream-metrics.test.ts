import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { waitFor } from '../support/stack.js';
import { testApi } from '../support-api/api-harness.js';
import { openSse } from '../support-api/sse-client.js';

// Streams as /metrics shows them (issue 53): the open-streams gauge, opens and closes by reason,
// refusals by the limit that refused them, and each stream counted once in api_requests_total,
// when it ends, however it ends.
describe('API stream metrics', () => {
  const api = testApi({ env: { API_STREAMS_PER_KEY: '2', API_STREAMS_MAX: '3' } });
  const base = api.config.api.basePath;
  const route = `${base}/streams/installationCurrentEnergyFlow`;
  const ID = 90;
  const key = newApiKey();
  const other = newApiKey();
  const third = newApiKey();
  let origin = '';

  const scrape = async () => (await fetch(`${origin}/metrics`)).text();
  const value = (text: string, series: string) => {
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  };
  const requests = `api_requests_total{route="${route}",method="GET",status="200"}`;
  const open = (k: string) => openSse(`${origin}${route}?installationId=${ID}`, { 'api-key': k });

  beforeAll(async () => {
    await api.ready();
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    await api.seed.installation(installation(ID));
    for (const [k, app] of [
      [key, 9],
      [other, 10],
      [third, 11],
    ] as const) {
      await api.seed.liveKey(k, { app, installations: [installation(ID)] });
    }
    await api.seed.devices(
      ID,
      [
        {
          category: 'battery',
          record: device('battery', ID, ID, Date.now() + 60_000, { soe: 40 }),
        },
      ],
      Date.now(),
      120,
    );
  });
  afterAll(() => api.close());

  it('writes every series from the start, at 0', async () => {
    const text = await scrape();
    expect(value(text, 'api_streams_open')).toBe(0);
    expect(value(text, 'api_stream_opens_total')).toBe(0);
    // The caps, so a rule divides by this process's own (ops/prometheus/recording.rules.yml).
    expect(value(text, 'api_stream_limit{limit="streams-max"}')).toBe(3);
    expect(value(text, 'api_stream_limit{limit="streams-per-key"}')).toBe(2);
    expect(value(text, 'api_stream_limit{limit="streams-per-application"}')).toBe(1024);
    for (const reason of ['client', 'revoked', 'slow-reader', 'shutdown', 'error']) {
      expect(value(text, `api_stream_closes_total{reason="${reason}"}`), reason).toBe(0);
    }
    for (const limit of ['streams-per-key', 'streams-per-application', 'streams-per-client']) {
      expect(value(text, `api_stream_refusals_total{limit="${limit}"}`), limit).toBe(0);
    }
    expect(value(text, 'api_stream_refusals_total{limit="streams-max"}')).toBe(0);
    expect(value(text, 'api_dropped_connections_total{reason="per-client"}')).toBe(0);
  });

  it('counts opens, the open gauge, refusals by limit, and each stream once when it ends', async () => {
    const streams = [await open(key), await open(key)];
    for (const s of streams) expect((await s.next()).event).toBe('energyFlow');
    // The key's cap, then the process's.
    const perKey = await open(key);
    expect(perKey.status).toBe(429);
    const third1 = await open(other);
    expect(third1.status).toBe(200);
    const overMax = await open(third);
    expect(overMax.status).toBe(503);
    let text = await scrape();
    expect(value(text, 'api_streams_open')).toBe(3);
    expect(value(text, 'api_stream_opens_total')).toBe(3);
    expect(value(text, 'api_stream_refusals_total{limit="streams-per-key"}')).toBe(1);
    expect(value(text, 'api_stream_refusals_total{limit="streams-max"}')).toBe(1);
    // Open streams are not answered requests yet.
    expect(value(text, requests)).toBeUndefined();
    // Two leave; the third loses access and is closed by the API.
    for (const s of streams) s.close();
    await api.seed.revokeKey(other);
    await third1.closed();
    text = await waitFor('the three ends counted', async () => {
      const t = await scrape();
      return value(t, 'api_streams_open') === 0 ? t : undefined;
    });
    expect(value(text, 'api_stream_closes_total{reason="client"}')).toBe(2);
    expect(value(text, 'api_stream_closes_total{reason="revoked"}')).toBe(1);
    await waitFor('each stream counted once in the request counter', async () =>
      value(await scrape(), requests) === 3 ? true : undefined,
    );
  });
});
