import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { refusedWithin } from '../support-api/access-ends.js';
import { testApi } from '../support-api/api-harness.js';

// beyond.md §4: the bulk energy flow endpoint.
describe('API bulk energy flow', () => {
  const t0 = Date.UTC(2026, 0, 15, 12, 0, 0);
  let nowMs = t0;
  const api = testApi({ clock: () => nowMs });
  const base = api.config.api.basePath;
  const windowS = api.config.ingest.onlineWindowSeconds;
  const key = newApiKey();
  const stranger = newApiKey();
  const mine = [installation(81), installation(82), installation(85)];
  const theirs = installation(83);
  const url = (ids: string) => `${base}/getInstallationsCurrentEnergyFlow?installationIds=${ids}`;
  const get = (ids: string, apiKey = key) =>
    api.app.inject({ method: 'GET', url: url(ids), headers: { 'api-key': apiKey } });
  const single = (id: number) =>
    api.app.inject({
      method: 'GET',
      url: `${base}/getInstallationCurrentEnergyFlow?installationId=${id}`,
      headers: { 'api-key': key },
    });

  beforeAll(async () => {
    await api.ready();
    for (const i of [...mine, theirs]) await api.seed.installation(i);
    await api.seed.devices(
      81,
      [
        { category: 'inverter', record: device('inverter', 1, 81, t0 - 1_000, { powerAc: 700 }) },
        {
          category: 'energyMeter',
          record: device('energyMeter', 2, 81, t0 - 60_000, { powerAc: 5 }),
        },
      ],
      nowMs,
      windowS,
    );
    await api.seed.devices(
      82,
      [{ category: 'inverter', record: device('inverter', 3, 82, t0 - 2_000, { powerAc: 300 }) }],
      nowMs,
      windowS,
    );
    await api.seed.devices(
      83,
      [{ category: 'inverter', record: device('inverter', 4, 83, t0 - 2_000, { powerAc: 1 }) }],
      nowMs,
      windowS,
    );
    await api.seed.liveKey(key, { app: 81, installations: mine });
    await api.seed.liveKey(stranger, { app: 83, installations: [theirs] });
  });
  afterAll(() => api.close());

  /** What the bulk answer should hold: each readable id's single-endpoint data, in order. */
  const expected = async (ids: number[]) => {
    const flows: unknown[] = [];
    const notFound: number[] = [];
    for (const id of [...ids].sort((a, b) => a - b)) {
      const res = await single(id);
      if (res.statusCode === 404) notFound.push(id);
      else flows.push({ installationId: id, data: res.json().data });
    }
    return { valid: true, flows, notFound };
  };

  it('answers each readable id with exactly the single endpoint data, the rest as notFound', async () => {
    const res = await get('85,83,81,999999,82');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(await expected([85, 83, 81, 999999, 82]));
    expect(res.json().notFound).toEqual([83, 999999]);
    expect(res.json().flows.map((f: { installationId: number }) => f.installationId)).toEqual([
      81, 82, 85,
    ]);
    expect(res.json().flows[2].data).toBeNull();
    // Byte for byte: each data is the single endpoint's serialization.
    const one = await single(81);
    expect(res.body).toContain(`{"installationId":81,"data":${JSON.stringify(one.json().data)}}`);
    expect(res.body).toContain(one.body.slice(one.body.indexOf('"data":') + 7, -1));
    expect(res.headers.etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
  });

  it('recomputes an expired flow as the single endpoint does', async () => {
    const before = await get('81');
    nowMs = t0 + (windowS - 30) * 1000; // the meter is offline, the inverter not yet
    try {
      const after = await get('81');
      expect(after.json()).toEqual(await expected([81]));
      expect(after.body).not.toBe(before.body);
    } finally {
      nowMs = t0;
    }
  });

  it('accepts POST with a form body', async () => {
    const res = await api.app.inject({
      method: 'POST',
      url: `${base}/getInstallationsCurrentEnergyFlow`,
      headers: { 'api-key': key, 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'installationIds=82%2C81',
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(await expected([81, 82]));
  });

  it('refuses bad parameters, after authentication', async () => {
    const invalid = [
      '',
      '1,',
      ',1',
      '1,,2',
      '1,1',
      '1,01',
      '1.5',
      'a',
      '1 ,2',
      `${'9'.repeat(20)}`,
    ];
    invalid.push(Array.from({ length: 101 }, (_, i) => i + 1).join(','));
    for (const ids of invalid) {
      const res = await get(ids);
      expect(res.statusCode, ids).toBe(400);
      expect(res.body).toBe('{"valid":false,"error":"INVALID_PARAMETERS"}');
      const anonymous = await get(ids, newApiKey());
      expect(anonymous.statusCode, ids).toBe(401);
    }
    const hundred = await get(Array.from({ length: 100 }, (_, i) => i + 1000).join(','));
    expect(hundred.statusCode).toBe(200);
    expect(hundred.json().notFound).toHaveLength(100);
    const missing = await api.app.inject({
      method: 'GET',
      url: `${base}/getInstallationsCurrentEnergyFlow`,
      headers: { 'api-key': key },
    });
    expect(missing.statusCode).toBe(400);
    expect(missing.body).toBe('{"valid":false,"error":"MISSING_PARAMETERS"}');
    const repeated = await api.app.inject({
      method: 'GET',
      url: `${url('1')}&installationIds=2`,
      headers: { 'api-key': key },
    });
    expect(repeated.statusCode).toBe(400);
  });

  it('never tells an inaccessible installation from a missing one; a dead key gets 401', async () => {
    const res = await get('83,999998');
    expect(res.json()).toEqual({ valid: true, flows: [], notFound: [83, 999998] });
    expect((await get('81', newApiKey())).statusCode).toBe(401);
    const revoked = newApiKey();
    await api.seed.liveKey(revoked, { app: 84, installations: [mine[0] as (typeof mine)[0]] });
    expect((await get('81', revoked)).statusCode).toBe(200);
    await api.seed.revokeKey(revoked);
    await refusedWithin(
      'bulk after revocation',
      Date.now(),
      async () => {
        const after = await get('81,83', revoked);
        return [after.statusCode, after.body];
      },
      [401, '{"valid":false,"error":"UNAUTHORIZED"}'],
    );
  });
});
