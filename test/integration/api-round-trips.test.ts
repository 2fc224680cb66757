import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testApi } from '../support-api/api-harness.js';
import { device, installation, newApiKey } from '../support-api/fixtures.js';

// The read path's performance contract: at most one Redis round trip per request. ioredis
// writes a pipeline to the socket in one write and each lone command in its own, so the
// writes a request causes are its round trips.
describe('API Redis round trips', () => {
  let nowMs = Date.now();
  const api = testApi({ clock: () => nowMs });
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

  const roundTrips = async (url: string, expectedStatus: number) => {
    writes = 0;
    const res = await api.app.inject({ url: `${base}${url}`, headers: { 'api-key': key } });
    expect(res.statusCode, url).toBe(expectedStatus);
    return writes;
  };

  it('uses one round trip per request, also when the flow must be recomputed', async () => {
    expect(await roundTrips('/getInstallations', 200)).toBe(1);
    expect(await roundTrips('/getInstallationDevices?installationId=3', 200)).toBe(1);
    expect(await roundTrips('/getInstallationCurrentEnergyFlow?installationId=3', 200)).toBe(1);
    expect(await roundTrips('/getInstallationDevices?installationId=4', 404)).toBe(1);
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
});
