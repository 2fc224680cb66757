import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testApi } from '../support-api/api-harness.js';
import { device, installation, newApiKey } from '../support-api/fixtures.js';

// The read path's performance contract: one Redis command per answered read; a refused one
// (401 or 404) takes a second, the key view that tells which. ioredis writes each lone command
// to the socket in its own write, so the writes a request causes are its round trips.
describe('API Redis round trips', () => {
  let nowMs = Date.now();
  // The uncached path's contract; the near-cache's own is in api-near-cache.test.ts.
  const api = testApi({ clock: () => nowMs, env: { API_NEAR_CACHE_ENTRIES: '0' } });
  const base = api.config.api.basePath;
  const key = newApiKey();
  let writes = 0;

  beforeAll(async () => {
    await api.ready();
    const stream = (api.redis as unknown as { stream: Socket }).stream;
    const write = stream.write.bind(stream) as (...args: unknown[]) => boolean;
    (stream as unknown as { write: (...args: unknown[]) => boolean }).write = (...args) => {
      writes += 1;
      return write(...args);
    };
    await api.seed.installation(installation(3));
    await api.seed.devices(
      3,
      [{ category: 'inverter', record: device('inverter', 1, 3, nowMs, { powerAc: 10 }) }],
      nowMs,
      api.config.ingest.onlineWindowSeconds,
    );
    await api.seed.liveKey(key, { app: 1, installations: [installation(3)] });
  });
  afterAll(() => api.close());

  const roundTrips = async (url: string, expectedStatus: number, apiKey = key) => {
    writes = 0;
    const res = await api.app.inject({ url: `${base}${url}`, headers: { 'api-key': apiKey } });
    expect(res.statusCode, url).toBe(expectedStatus);
    return writes;
  };

  it('uses one round trip per answered read, also when the flow must be recomputed', async () => {
    expect(await roundTrips('/getInstallations', 200)).toBe(1);
    expect(await roundTrips('/getInstallationDevices?installationId=3', 200)).toBe(1);
    expect(await roundTrips('/getInstallationCurrentEnergyFlow?installationId=3', 200)).toBe(1);
    expect(await roundTrips('/getInstallationDevices?installationId=x', 400)).toBe(1);
    // A refused body: no lookup without a well-formed key, one lookup to decide 401 or 415.
    for (const [headers, status, trips] of [
      [{}, 401, 0],
      [{ 'api-key': newApiKey() }, 401, 1],
      [{ 'api-key': key }, 415, 1],
    ] as const) {
      writes = 0;
      const res = await api.app.inject({
        method: 'POST',
        url: `${base}/getInstallationDevices`,
        headers: { ...headers, 'content-type': 'application/json' },
        payload: '{"installationId":3}',
      });
      expect(res.statusCode).toBe(status);
      expect(writes).toBe(trips);
    }
    nowMs += (api.config.ingest.onlineWindowSeconds + 1) * 1000;
    expect(await roundTrips('/getInstallationCurrentEnergyFlow?installationId=3', 200)).toBe(1);
  });

  it('sends the flow reads of requests that arrive together in one socket write', async () => {
    const stream = (api.redis as unknown as { stream: Socket }).stream as Socket & {
      _write: (...args: unknown[]) => void;
      _writev: (...args: unknown[]) => void;
    };
    let flushes = 0;
    const { _write, _writev } = stream;
    stream._write = (...args) => {
      flushes += 1;
      _write.apply(stream, args);
    };
    stream._writev = (...args) => {
      flushes += 1;
      _writev.apply(stream, args);
    };
    const together = async (path: string, count: number) => {
      writes = 0;
      flushes = 0;
      const responses = await Promise.all(
        Array.from({ length: count }, () =>
          api.app.inject({ url: `${base}${path}`, headers: { 'api-key': key } }),
        ),
      );
      expect(responses.map((r) => r.statusCode)).toEqual(Array(count).fill(200));
      expect(writes).toBe(count);
      return flushes;
    };
    try {
      expect(await together('/getInstallationCurrentEnergyFlow?installationId=3', 3)).toBe(1);
      // Large replies are not held back (measured slower): one write per command.
      expect(await together('/getInstallationDevices?installationId=3', 3)).toBe(3);
    } finally {
      stream._write = _write;
      stream._writev = _writev;
    }
  });

  it('reads the key view second, and only, when the script refuses', async () => {
    for (const path of ['/getInstallationDevices', '/getInstallationCurrentEnergyFlow']) {
      expect(await roundTrips(`${path}?installationId=4`, 404, key)).toBe(2);
      expect(await roundTrips(`${path}?installationId=3`, 401, newApiKey())).toBe(2);
    }
    expect(await roundTrips('/getInstallations', 401, newApiKey())).toBe(1);
  });
});
