import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { testApi } from '../support-api/api-harness.js';

// installationId rules (semantics.md "Requests") and POST form bodies.
describe('API parameters', () => {
  const api = testApi();
  const base = api.config.api.basePath;
  const key = newApiKey();
  const headers = { 'api-key': key };
  const endpoints = ['/getInstallationDevices', '/getInstallationCurrentEnergyFlow'];

  beforeAll(async () => {
    await api.ready();
    await api.seed.installation(installation(42));
    await api.seed.installation(installation(43));
    await api.seed.liveKey(key, { app: 1, installations: [installation(42), installation(43)] });
  });
  afterAll(() => api.close());

  const get = (path: string, query: string) =>
    api.app.inject({ method: 'GET', url: `${base}${path}${query}`, headers });
  const post = (path: string, query: string, body: string) =>
    api.app.inject({
      method: 'POST',
      url: `${base}${path}${query}`,
      headers: { ...headers, 'content-type': 'application/x-www-form-urlencoded' },
      payload: body,
    });

  it('rejects every value that is not an optional minus and digits in the safe range', async () => {
    const invalid = [
      '12.0',
      '1e3',
      '0x1A',
      '%2012',
      '12%20',
      '12abc',
      '',
      '+12',
      '--1',
      '9007199254740992',
      '99999999999999999999',
      '%EF%BC%91',
    ];
    for (const path of endpoints) {
      for (const value of invalid) {
        const res = await get(path, `?installationId=${value}`);
        expect(res.statusCode, `${path} ${value}`).toBe(400);
        expect(res.json()).toEqual({ valid: false, error: 'INVALID_PARAMETERS' });
      }
      const bare = await get(path, '?installationId');
      expect(bare.json().error).toBe('INVALID_PARAMETERS');
      const repeated = await get(path, '?installationId=42&installationId=42');
      expect(repeated.json()).toEqual({ valid: false, error: 'INVALID_PARAMETERS' });
    }
  });

  it('answers MISSING_PARAMETERS when installationId is absent', async () => {
    for (const path of endpoints) {
      for (const query of ['', '?other=1', '?installationid=42']) {
        const res = await get(path, query);
        expect(res.statusCode).toBe(400);
        expect(res.json()).toEqual({ valid: false, error: 'MISSING_PARAMETERS' });
      }
    }
  });

  it('accepts digits with a minus sign and leading zeros; a negative id does not exist', async () => {
    const padded = await get('/getInstallationDevices', '?installationId=0042');
    expect(padded.statusCode).toBe(200);
    expect(padded.json().installationId).toBe(42);
    const negative = await get('/getInstallationDevices', '?installationId=-42');
    expect(negative.statusCode).toBe(404);
    const max = await get('/getInstallationDevices', '?installationId=9007199254740991');
    expect(max.statusCode).toBe(404);
  });

  it('accepts POST form bodies on all three endpoints; the body value overrides the query', async () => {
    const list = await post('/getInstallations', '', '');
    expect(list.statusCode).toBe(200);
    for (const path of endpoints) {
      const plain = await post(path, '', 'installationId=42');
      expect(plain.statusCode).toBe(200);
      expect(plain.json().installationId).toBe(42);
      const override = await post(path, '?installationId=43', 'installationId=42');
      expect(override.json().installationId).toBe(42);
      const badQueryGoodBody = await post(path, '?installationId=x', 'installationId=43');
      expect(badQueryGoodBody.json().installationId).toBe(43);
      const badBody = await post(path, '?installationId=42', 'installationId=4.2');
      expect(badBody.json()).toEqual({ valid: false, error: 'INVALID_PARAMETERS' });
      const queryOnly = await post(path, '?installationId=43', 'other=1');
      expect(queryOnly.json().installationId).toBe(43);
      const missing = await post(path, '', 'other=1');
      expect(missing.json()).toEqual({ valid: false, error: 'MISSING_PARAMETERS' });
      const repeatedInBody = await post(path, '', 'installationId=42&installationId=43');
      expect(repeatedInBody.json()).toEqual({ valid: false, error: 'INVALID_PARAMETERS' });
    }
  });

  it('refuses a POST body of another content type with a JSON error outside the API table', async () => {
    const res = await api.app.inject({
      method: 'POST',
      url: `${base}/getInstallationDevices`,
      headers: { ...headers, 'content-type': 'application/json' },
      payload: '{"installationId":42}',
    });
    expect(res.statusCode).toBe(415);
    expect(res.json()).toEqual({ valid: false, error: 'UNSUPPORTED_MEDIA_TYPE' });
  });

  it('refuses a body over the configured limit with 413', async () => {
    const res = await post(
      '/getInstallationDevices',
      '',
      `installationId=42&pad=${'x'.repeat(api.config.api.bodyLimitBytes)}`,
    );
    expect(res.statusCode).toBe(413);
    expect(res.json()).toEqual({ valid: false, error: 'PAYLOAD_TOO_LARGE' });
  });
});
