import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { etagOf } from '../../api/http/etag.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { testApi } from '../support-api/api-harness.js';

// beyond.md §3: br or gzip for bodies of 1 KiB or more, when Accept-Encoding asks.
describe('API compression', () => {
  const nowMs = Date.UTC(2026, 0, 15, 12, 0, 0);
  const api = testApi({ clock: () => nowMs });
  const base = api.config.api.basePath;
  const key = newApiKey();
  const inst = installation(71);
  const devicesUrl = `${base}/getInstallationDevices?installationId=${inst.id}`;
  const flowUrl = `${base}/getInstallationCurrentEnergyFlow?installationId=${inst.id}`;
  const get = (url: string, headers: Record<string, string> = {}) =>
    api.app.inject({ method: 'GET', url, headers: { 'api-key': key, ...headers } });

  beforeAll(async () => {
    await api.ready();
    await api.seed.installation(inst);
    const devices = [1, 2, 3, 4].map((id) => ({
      category: 'inverter' as const,
      record: device('inverter', id, inst.id, nowMs - 1_000, { powerAc: 100 * id }),
    }));
    await api.seed.devices(inst.id, devices, nowMs, api.config.ingest.onlineWindowSeconds);
    await api.seed.liveKey(key, { app: 71, installations: [inst] });
  });
  afterAll(() => api.close());

  it('compresses a large body with the preferred coding, under its own strong ETag', async () => {
    const plain = await get(devicesUrl);
    expect(plain.rawPayload.length).toBeGreaterThanOrEqual(1024);
    expect(plain.headers['content-encoding']).toBeUndefined();
    const identityTag = plain.headers.etag as string;
    const cases = [
      ['br', 'br', brotliDecompressSync],
      ['gzip, deflate', 'gzip', gunzipSync],
      ['gzip;q=1, br;q=0.5', 'gzip', gunzipSync],
      ['br;q=0, *', 'gzip', gunzipSync],
      ['*', 'br', brotliDecompressSync],
    ] as const;
    for (const [accept, coding, decode] of cases) {
      const res = await get(devicesUrl, { 'accept-encoding': accept });
      expect(res.headers['content-encoding'], accept).toBe(coding);
      expect(res.headers.vary).toBe('Accept-Encoding');
      expect(res.rawPayload.length).toBeLessThan(plain.rawPayload.length);
      expect(decode(res.rawPayload).equals(plain.rawPayload), accept).toBe(true);
      const tag = res.headers.etag as string;
      expect(tag).toBe(`${identityTag.slice(0, -1)}-${coding === 'br' ? 'br' : 'gz'}"`);
      // The stored compressed copy and the identity copy are both current: 304, naming the copy.
      const again = await get(devicesUrl, { 'accept-encoding': accept, 'if-none-match': tag });
      expect(again.statusCode).toBe(304);
      expect(again.headers.etag).toBe(tag);
      const fromIdentity = await get(devicesUrl, {
        'accept-encoding': accept,
        'if-none-match': identityTag,
      });
      expect(fromIdentity.statusCode).toBe(304);
      expect(fromIdentity.headers.etag).toBe(identityTag);
    }
  });

  it('sends identity when nothing acceptable is asked for, or the body is under 1 KiB', async () => {
    for (const accept of ['identity', 'deflate', 'br;q=0, gzip;q=0', '']) {
      const res = await get(devicesUrl, accept === '' ? {} : { 'accept-encoding': accept });
      expect(res.headers['content-encoding'], accept).toBeUndefined();
      expect(res.headers.etag).toBe(etagOf(res.rawPayload));
    }
    const small = await get(flowUrl, { 'accept-encoding': 'br, gzip' });
    expect(small.rawPayload.length).toBeLessThan(1024);
    expect(small.headers['content-encoding']).toBeUndefined();
    expect(small.headers.vary).toBe('Accept-Encoding');
    expect(small.headers.etag).toBe(etagOf(small.rawPayload));
  });
});
