import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { waitFor } from '../support/stack.js';
import { testApi } from '../support-api/api-harness.js';

// The read path's performance contract: one Redis command per answered read, and per refused
// one (404: the read's script alone; 401: the key's status alone, before any data read). A key
// is judged from its status and its application's, read once and then kept in memory while the
// API hears the access channel. ioredis writes each lone command to the socket in its own
// write, so the writes a request causes are its round trips.
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

  it('reads a key first seen by its status, then its application status, then keeps both', async () => {
    const fresh = newApiKey();
    await api.seed.liveKey(fresh, { app: 2, installations: [installation(3)] });
    const path = '/getInstallationDevices?installationId=3';
    // Until the API hears the access channel (its own connection, subscribed after start),
    // every request reads them; once it does, the first request reads them and keeps them.
    await waitFor('the statuses kept', async () =>
      (await roundTrips(path, 200, fresh)) === 1 ? true : undefined,
    );
    const other = newApiKey();
    await api.seed.liveKey(other, { app: 3, installations: [installation(3)] });
    expect(await roundTrips(path, 200, other)).toBe(3);
    expect(await roundTrips(path, 200, other)).toBe(1);
  });

  it('uses one round trip per answered read, also when the flow must be recomputed', async () => {
    await waitFor('the statuses kept', async () =>
      (await roundTrips('/getInstallations', 200)) === 1 ? true : undefined,
    );
    expect(await roundTrips('/getInstallations', 200)).toBe(1);
    expect(await roundTrips('/getInstallationDevices?installationId=3', 200)).toBe(1);
    expect(await roundTrips('/getInstallationCurrentEnergyFlow?installationId=3', 200)).toBe(1);
    // Bad parameters of a live key: its statuses kept, nothing to read.
    expect(await roundTrips('/getInstallationDevices?installationId=x', 400)).toBe(0);
    // A refused body: no lookup without a well-formed key, one lookup of a key first seen to
    // decide 401, none for a key whose statuses are kept to decide 415.
    for (const [headers, status, trips] of [
      [{}, 401, 0],
      [{ 'api-key': newApiKey() }, 401, 1],
      [{ 'api-key': key }, 415, 0],
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

  it('sends the flow and devices reads of requests that arrive together in one socket write', async () => {
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
      expect(await together('/getInstallationDevices?installationId=3', 3)).toBe(1);
    } finally {
      stream._write = _write;
      stream._writev = _writev;
    }
  });

  it('refuses with one round trip: 404 the script alone, 401 the key status alone', async () => {
    await waitFor('the statuses kept', async () =>
      (await roundTrips('/getInstallations', 200)) === 1 ? true : undefined,
    );
    for (const path of ['/getInstallationDevices', '/getInstallationCurrentEnergyFlow']) {
      expect(await roundTrips(`${path}?installationId=4`, 404, key)).toBe(1);
      expect(await roundTrips(`${path}?installationId=3`, 401, newApiKey())).toBe(1);
    }
    expect(await roundTrips('/getInstallations', 401, newApiKey())).toBe(1);
  });
});
