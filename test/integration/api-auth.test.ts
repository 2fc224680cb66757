import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/domain/access-rule.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { refusedWithin } from '../support-api/access-ends.js';
import { testApi } from '../support-api/api-harness.js';

// Authentication rules of read-api.md and semantics.md, against a seeded read model.
describe('API authentication', () => {
  const api = testApi();
  const base = api.config.api.basePath;
  const live = newApiKey();
  const other = newApiKey();
  const inst = installation(101);
  const UNAUTHORIZED = { valid: false, error: 'UNAUTHORIZED' };

  const get = (url: string, headers: Record<string, string> = {}) =>
    api.app.inject({ method: 'GET', url: `${base}${url}`, headers });

  beforeAll(async () => {
    await api.ready();
    await api.seed.installation(inst);
    await api.seed.devices(
      inst.id,
      [{ category: 'battery', record: device('battery', 1, inst.id, Date.now(), { soe: 50 }) }],
      Date.now(),
      api.config.ingest.onlineWindowSeconds,
    );
    await api.seed.liveKey(live, { app: 1, installations: [inst] });
    await api.seed.liveKey(other, { app: 2, installations: [] });
  });
  afterAll(() => api.close());

  it('accepts the key in Api-Key and in Authorization: Bearer (any case of the scheme)', async () => {
    const variants: Array<Record<string, string>> = [
      { 'api-key': live },
      { authorization: `Bearer ${live}` },
      { authorization: `bEaReR ${live}` },
    ];
    for (const headers of variants) {
      const res = await get('/getInstallations', headers);
      expect(res.statusCode, JSON.stringify(headers)).toBe(200);
      expect(res.json().installations.map((i: { id: number }) => i.id)).toEqual([101]);
    }
  });

  it('lets Bearer win over Api-Key, valid or not', async () => {
    const badBearer = await get('/getInstallations', {
      authorization: 'Bearer itk_short',
      'api-key': live,
    });
    expect(badBearer.statusCode).toBe(401);
    const goodBearer = await get('/getInstallations', {
      authorization: `Bearer ${live}`,
      'api-key': 'nonsense',
    });
    expect(goodBearer.statusCode).toBe(200);
    const otherBearer = await get('/getInstallationDevices?installationId=101', {
      authorization: `Bearer ${other}`,
      'api-key': live,
    });
    expect(otherBearer.statusCode).toBe(404);
  });

  it('ignores a non-Bearer Authorization header', async () => {
    const withApiKey = await get('/getInstallations', {
      authorization: `Basic ${Buffer.from('a:b').toString('base64')}`,
      'api-key': live,
    });
    expect(withApiKey.statusCode).toBe(200);
    const alone = await get('/getInstallations', { authorization: `Token ${live}` });
    expect(alone.statusCode).toBe(401);
  });

  it('answers the same 401 for missing, malformed, unknown, revoked and expired keys', async () => {
    const expired = newApiKey();
    await api.seed.liveKey(expired, { app: 3, expiresAtMs: Date.now() - 1, installations: [inst] });
    const revoked = newApiKey();
    await api.seed.liveKey(revoked, { app: 4, installations: [inst] });
    await api.seed.revokeKey(revoked);
    const cases: Record<string, Record<string, string>> = {
      missing: {},
      empty: { 'api-key': '' },
      bearerWithoutKey: { authorization: 'Bearer' },
      tooShort: { 'api-key': `itk_${'a'.repeat(31)}` },
      tooLong: { 'api-key': `itk_${'a'.repeat(65)}` },
      badPrefix: { 'api-key': `itx_${'a'.repeat(40)}` },
      badChar: { 'api-key': `itk_${'a'.repeat(39)}-` },
      unknown: { 'api-key': newApiKey() },
      revoked: { 'api-key': revoked },
      expired: { 'api-key': expired },
    };
    for (const [name, headers] of Object.entries(cases)) {
      for (const url of [
        '/getInstallations',
        '/getInstallationDevices?installationId=101',
        '/getInstallationCurrentEnergyFlow?installationId=101',
      ]) {
        const res = await get(url, headers);
        expect(res.statusCode, `${name} ${url}`).toBe(401);
        expect(res.json(), `${name} ${url}`).toEqual(UNAUTHORIZED);
        expect(res.body).not.toContain('itk_');
      }
    }
  });

  it('stops a per-installation read as soon as the key or its access ends, each way it can', async () => {
    // A key is judged from its status and its application's, kept in memory while the API
    // hears the access channel: every way a key stops working must reach them (401), every way
    // its application's access ends must reach the installation's acl entry (404).
    const devices = '/getInstallationDevices?installationId=101';
    const flow = '/getInstallationCurrentEnergyFlow?installationId=101';
    const statuses = async (apiKey: string) =>
      Promise.all(
        [devices, flow].map(async (url) => (await get(url, { 'api-key': apiKey })).statusCode),
      );
    const ended: Array<[string, (key: string) => Promise<void>, number]> = [
      ['revoked', (key) => api.seed.revokeKey(key), 401],
      ['application disabled', (key) => api.seed.disableApplication(key), 401],
      ['application deleted', (key) => api.seed.deleteApplication(key), 401],
      ['rotated away', (key) => api.seed.rotateKey(key, newApiKey()), 401],
      ['membership removed', (key) => api.seed.removeMembership(key, inst.id), 404],
      ['grant removed', (key) => api.seed.removeGrant(key, inst.id), 404],
    ];
    let app = 20;
    for (const [name, end, status] of ended) {
      const key = newApiKey();
      await api.seed.liveKey(key, { app: app++, installations: [inst] });
      expect(await statuses(key), name).toEqual([200, 200]);
      await end(key);
      await refusedWithin(name, Date.now(), () => statuses(key), [status, status]);
    }
    const rotated = newApiKey();
    const replacement = newApiKey();
    await api.seed.liveKey(rotated, { app: app++, installations: [inst] });
    await api.seed.rotateKey(rotated, replacement);
    expect(await statuses(replacement)).toEqual([200, 200]);
  });

  it('treats the expiry instant itself as expired', async () => {
    const now = Date.now() + 60_000;
    const key = newApiKey();
    await api.seed.liveKey(key, { app: 5, expiresAtMs: now, installations: [inst] });
    const clocked = testApi({ clock: () => now });
    try {
      await clocked.ready();
      await clocked.seed.liveKey(key, { app: 5, expiresAtMs: now, installations: [inst] });
      const res = await clocked.app.inject({
        url: `${base}/getInstallations`,
        headers: { 'api-key': key },
      });
      expect(res.statusCode).toBe(401);
    } finally {
      await clocked.close();
    }
    expect((await get('/getInstallations', { 'api-key': key })).statusCode).toBe(200);
  });

  it('refuses a key expiring at the epoch, before it or the millisecond after; serves none and future', async () => {
    // No instant stands for "never" (key-status-codec.ts): the epoch is an instant like another.
    const cases: Array<[string, number | null, number]> = [
      ['epoch', Date.parse('1970-01-01T00:00:00Z'), 401],
      ['before the epoch', Date.parse('1969-12-31T23:59:59Z'), 401],
      ['the millisecond after', Date.parse('1970-01-01T00:00:00.001Z'), 401],
      ['no expiresAt', null, 200],
      ['future', Date.now() + 86_400_000, 200],
    ];
    let app = 40;
    for (const [name, expiresAtMs, status] of cases) {
      const key = newApiKey();
      await api.seed.liveKey(key, { app: app++, expiresAtMs, installations: [inst] });
      for (const url of [
        '/getInstallations',
        '/getInstallationDevices?installationId=101',
        '/getInstallationCurrentEnergyFlow?installationId=101',
      ]) {
        const res = await get(url, { 'api-key': key });
        expect(res.statusCode, `${name} ${url}`).toBe(status);
        if (status === 401) expect(res.json(), `${name} ${url}`).toEqual(UNAUTHORIZED);
      }
    }
  });

  it('reads a key status written before format 2 as meant, and the epoch once rewritten', async () => {
    // A consumer before format 2 wrote `exp` 0 (and no `v`) both for "never" and for the epoch.
    // Such a record keeps working (a key issued without expiry must not stop on an upgrade);
    // applying the key's fact again, as a rebuild does, writes format 2 and refuses the epoch.
    const key = newApiKey();
    await api.seed.liveKey(key, { app: 50, installations: [inst] });
    const hash = hashApiKey(key);
    await api.redis.hdel(api.seed.keys.keyStatus(hash), 'v');
    await api.redis.hset(api.seed.keys.keyStatus(hash), 'exp', '0');
    expect((await get('/getInstallations', { 'api-key': key })).statusCode).toBe(200);
    await api.seed.liveKey(key, { app: 50, expiresAtMs: 0, installations: [inst] });
    await refusedWithin(
      'epoch key rewritten',
      Date.now(),
      async () => [(await get('/getInstallations', { 'api-key': key })).statusCode],
      [401],
    );
  });

  it('checks auth before parameters', async () => {
    for (const url of [
      '/getInstallationDevices',
      '/getInstallationDevices?installationId=abc',
      '/getInstallationCurrentEnergyFlow?installationId=1.5',
    ]) {
      expect((await get(url)).statusCode, url).toBe(401);
      expect((await get(url, { 'api-key': newApiKey() })).statusCode, url).toBe(401);
    }
  });

  it('answers 401 before reading the body: its type or size never shows without a live key', async () => {
    const post = (path: string, headers: Record<string, string>, type: string, payload: string) =>
      api.app.inject({
        method: 'POST',
        url: `${base}${path}`,
        headers: { ...headers, 'content-type': type },
        payload,
      });
    const json = ['application/json', '{"installationId":101}'] as const;
    const huge = [
      'application/x-www-form-urlencoded',
      `installationId=101&pad=${'x'.repeat(20 * 1024)}`,
    ] as const;
    const refused: Record<string, Record<string, string>> = {
      missing: {},
      malformed: { 'api-key': 'itk_short' },
      unknown: { 'api-key': newApiKey() },
    };
    for (const path of ['/getInstallations', '/getInstallationDevices']) {
      for (const [name, headers] of Object.entries(refused)) {
        for (const [type, payload] of [json, huge]) {
          const res = await post(path, headers, type, payload);
          expect(res.statusCode, `${path} ${name} ${type}`).toBe(401);
          expect(res.json()).toEqual(UNAUTHORIZED);
        }
      }
      const unsupported = await post(path, { 'api-key': live }, ...json);
      expect(unsupported.statusCode, path).toBe(415);
      expect(unsupported.json()).toEqual({ valid: false, error: 'UNSUPPORTED_MEDIA_TYPE' });
      const tooLarge = await post(path, { 'api-key': live }, ...huge);
      expect(tooLarge.statusCode, path).toBe(413);
    }
  });

  it('answers 404 DOESNT_EXIST without a grant (acl entry absent), as for a missing installation', async () => {
    const noGrant = await get('/getInstallationDevices?installationId=101', { 'api-key': other });
    const missing = await get('/getInstallationDevices?installationId=999999', { 'api-key': live });
    for (const res of [noGrant, missing]) {
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({ valid: false, error: 'DOESNT_EXIST' });
    }
    const revokedGrant = newApiKey();
    await api.seed.liveKey(revokedGrant, { app: 6, installations: [inst] });
    await api.seed.removeGrant(revokedGrant, inst.id);
    const flow = await get('/getInstallationCurrentEnergyFlow?installationId=101', {
      'api-key': revokedGrant,
    });
    expect(flow.statusCode).toBe(404);
    const list = await get('/getInstallations', { 'api-key': revokedGrant });
    expect(list.json()).toEqual({ valid: true, installations: [] });
  });

  it('answers 404 once the installation is deleted, even if an acl entry lingers', async () => {
    const gone = installation(102);
    await api.seed.installation(gone);
    const key = newApiKey();
    const hash = await api.seed.liveKey(key, { app: 7, installations: [gone] });
    const devices = () => get('/getInstallationDevices?installationId=102', { 'api-key': key });
    expect((await devices()).statusCode).toBe(200);
    await api.seed.deleteInstallation(102);
    expect((await devices()).statusCode).toBe(404);
    // Fault injection, not a consumer write: the read script also checks the installation.
    await api.redis.hset(api.seed.keys.acl(102), hash, '0');
    expect((await devices()).statusCode).toBe(404);
  });
});
