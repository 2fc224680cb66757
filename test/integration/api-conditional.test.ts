import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { etagOf } from '../../api/http/etag.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { testApi } from '../support-api/api-harness.js';

// beyond.md §1 (conditional reads) and §2 (data age), over real Redis.
describe('API conditional reads and data age', () => {
  let nowMs = Date.UTC(2026, 0, 15, 12, 0, 0);
  const api = testApi({ clock: () => nowMs });
  const base = api.config.api.basePath;
  const windowS = api.config.ingest.onlineWindowSeconds;
  const key = newApiKey();
  const stranger = newApiKey();
  const inst = installation(61);
  const hidden = installation(62);
  const empty = installation(63);
  const t0 = nowMs;
  const inverterSeen = t0 - 5_000;
  const meterSeen = t0 - 40_000;

  const get = (url: string, headers: Record<string, string> = {}, apiKey = key) =>
    api.app.inject({
      method: 'GET',
      url: `${base}${url}`,
      headers: { 'api-key': apiKey, ...headers },
    });
  const head = (url: string, headers: Record<string, string> = {}) =>
    api.app.inject({
      method: 'HEAD',
      url: `${base}${url}`,
      headers: { 'api-key': key, ...headers },
    });

  const devicesUrl = `/getInstallationDevices?installationId=${inst.id}`;
  const flowUrl = `/getInstallationCurrentEnergyFlow?installationId=${inst.id}`;
  const urls = ['/getInstallations', devicesUrl, flowUrl];

  beforeAll(async () => {
    await api.ready();
    for (const i of [inst, hidden, empty]) await api.seed.installation(i);
    await api.seed.devices(
      inst.id,
      [
        {
          category: 'inverter',
          record: device('inverter', 1, inst.id, inverterSeen, { powerAc: 900 }),
        },
        {
          category: 'energyMeter',
          record: device('energyMeter', 2, inst.id, meterSeen, { powerAc: 10 }),
        },
      ],
      nowMs,
      windowS,
    );
    await api.seed.liveKey(key, { app: 61, installations: [inst, empty] });
    await api.seed.liveKey(stranger, { app: 62, installations: [hidden] });
  });
  afterAll(() => api.close());

  it('gives every 200 a strong ETag of its body bytes, Cache-Control and Vary', async () => {
    for (const url of urls) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(200);
      expect(res.headers.etag, url).toBe(etagOf(res.rawPayload));
      expect(res.headers.etag, url).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
      expect(res.headers['cache-control'], url).toBe('private, no-cache');
      expect(res.headers.vary, url).toBe('Accept-Encoding');
      // Same body, same tag (a second replica computes the same function of the bytes).
      expect((await get(url)).headers.etag, url).toBe(res.headers.etag);
    }
  });

  it('answers 304 without a body for a matching tag, `*`, a list or a weak tag', async () => {
    for (const url of urls) {
      const tag = (await get(url)).headers.etag as string;
      for (const inm of [tag, '*', `"nope", ${tag}`, `W/${tag}`, `"a",W/${tag} , "b"`]) {
        const res = await get(url, { 'if-none-match': inm });
        expect(res.statusCode, `${url} ${inm}`).toBe(304);
        expect(res.body).toBe('');
        expect(res.headers.etag).toBe(tag);
        expect(res.headers['content-length']).toBeUndefined();
        expect(res.headers.vary).toBe('Accept-Encoding');
      }
      const other = await get(url, { 'if-none-match': '"someone-else", W/"x"' });
      expect(other.statusCode, url).toBe(200);
      expect(other.headers.etag).toBe(tag);
    }
  });

  it('answers a conditional HEAD as the conditional GET, and a POST as before', async () => {
    const tag = (await get(flowUrl)).headers.etag as string;
    const notModified = await head(flowUrl, { 'if-none-match': tag });
    expect(notModified.statusCode).toBe(304);
    expect(notModified.headers.etag).toBe(tag);
    const changed = await head(flowUrl, { 'if-none-match': '"other"' });
    expect(changed.statusCode).toBe(200);
    expect(changed.headers.etag).toBe(tag);
    expect(changed.body).toBe('');
    // Preconditions apply to GET and HEAD (RFC 9110 §13.2.1): a POST read answers its 200.
    const post = await api.app.inject({
      method: 'POST',
      url: `${base}/getInstallationCurrentEnergyFlow`,
      headers: {
        'api-key': key,
        'if-none-match': tag,
        'content-type': 'application/x-www-form-urlencoded',
      },
      payload: `installationId=${inst.id}`,
    });
    expect(post.statusCode).toBe(200);
    expect(post.headers.etag).toBe(tag);
  });

  it('checks auth, parameters and access first: a 304 reveals nothing a 200 would not', async () => {
    const hiddenUrl = `/getInstallationDevices?installationId=${hidden.id}`;
    const theirs = await get(hiddenUrl, {}, stranger);
    expect(theirs.statusCode).toBe(200);
    const tag = theirs.headers.etag as string;
    for (const inm of [tag, '*']) {
      const mine = await get(hiddenUrl, { 'if-none-match': inm });
      expect(mine.statusCode).toBe(404);
      expect(mine.body).toBe('{"valid":false,"error":"DOESNT_EXIST"}');
      expect(mine.headers.etag).toBeUndefined();
      const missing = await get('/getInstallationDevices?installationId=999999', {
        'if-none-match': inm,
      });
      expect(missing.body).toBe(mine.body);
      const bad = await get('/getInstallationDevices?installationId=1.5', { 'if-none-match': inm });
      expect(bad.statusCode).toBe(400);
      const noKey = await get(hiddenUrl, { 'if-none-match': inm }, newApiKey());
      expect(noKey.statusCode).toBe(401);
      expect(noKey.headers.etag).toBeUndefined();
    }
  });

  it('serves Last-Modified, the latest lastSeenDate in the body, and honours If-Modified-Since', async () => {
    const expected = new Date(Math.floor(inverterSeen / 1000) * 1000).toUTCString();
    for (const url of [devicesUrl, flowUrl]) {
      const res = await get(url);
      expect(res.headers['last-modified'], url).toBe(expected);
      const same = await get(url, { 'if-modified-since': expected });
      expect(same.statusCode, url).toBe(304);
      const later = await get(url, {
        'if-modified-since': new Date(inverterSeen + 60_000).toUTCString(),
      });
      expect(later.statusCode, url).toBe(304);
      const earlier = await get(url, {
        'if-modified-since': new Date(inverterSeen - 2_000).toUTCString(),
      });
      expect(earlier.statusCode, url).toBe(200);
      expect(earlier.body).toBe(res.body);
      expect((await get(url, { 'if-modified-since': 'not a date' })).statusCode, url).toBe(200);
      // If-None-Match takes precedence: a non-matching tag means 200 whatever the date says.
      const both = await get(url, { 'if-none-match': '"other"', 'if-modified-since': expected });
      expect(both.statusCode, url).toBe(200);
    }
    // getInstallations: no data age; an installation without devices: none either.
    expect((await get('/getInstallations')).headers['last-modified']).toBeUndefined();
    const none = await get(`/getInstallationDevices?installationId=${empty.id}`);
    expect(none.statusCode).toBe(200);
    expect(none.headers['last-modified']).toBeUndefined();
    const noFlow = await get(`/getInstallationCurrentEnergyFlow?installationId=${empty.id}`);
    expect(noFlow.json().data).toBeNull();
    expect(noFlow.headers['last-modified']).toBeUndefined();
  });

  it('changes the flow ETag when a device goes offline by time alone', async () => {
    const before = await get(flowUrl);
    expect(before.json().data.energyMeterPower ?? before.json().data.gridPower).not.toBeUndefined();
    const tag = before.headers.etag as string;
    // The meter leaves the online window; nothing is written.
    nowMs = meterSeen + (windowS + 1) * 1000;
    const after = await get(flowUrl, { 'if-none-match': tag });
    expect(after.statusCode).toBe(200);
    expect(after.body).not.toBe(before.body);
    expect(after.headers.etag).toBe(etagOf(after.rawPayload));
    expect(after.headers.etag).not.toBe(tag);
    nowMs = t0;
  });

  it('sends the seed bytes and headers unchanged to a client using none of it', async () => {
    for (const url of urls) {
      const res = await get(url);
      const { etag, vary, 'last-modified': _lm, ...rest } = res.headers;
      expect(etag).toBeDefined();
      expect(vary).toBe('Accept-Encoding');
      expect(Object.keys(rest).sort(), url).toEqual(
        [
          'cache-control',
          'connection',
          'content-length',
          'content-type',
          'date',
          'x-content-type-options',
        ].filter((h) => h in rest),
      );
      // As the seed sent them: list bodies are Buffers (no charset), the flow a string.
      expect(rest['content-type'], url).toBe(
        url === flowUrl ? 'application/json; charset=utf-8' : 'application/json',
      );
      expect(rest['content-encoding']).toBeUndefined();
    }
  });
});
