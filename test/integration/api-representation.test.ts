import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_FIELD_NAMES } from '../../src/domain/device-fields.js';
import { serializeDevice } from '../../src/domain/device-record.js';
import { serializeInstallation } from '../../src/domain/installation.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { testApi } from '../support-api/api-harness.js';
import { createResponseValidator } from '../support-api/openapi-validator.js';

// What the three endpoints write: the stored bytes in the documented envelopes, in order.
describe('API representation', () => {
  let nowMs = Date.UTC(2026, 0, 15, 12, 0, 0);
  const api = testApi({ clock: () => nowMs });
  const base = api.config.api.basePath;
  const windowS = api.config.ingest.onlineWindowSeconds;
  const key = newApiKey();
  const headers = { 'api-key': key };
  const validator = createResponseValidator(base);
  const inst = [
    installation(30),
    installation(7, { type: 'commercial', creationDate: null }),
    installation(12),
    // Non-ASCII text: the bodies are joined from stored bytes, never decoded and re-encoded.
    installation(40, { name: 'Zürich – Ōsaka ☀', city: 'Liège' }),
  ];
  const t0 = nowMs;

  const get = async (url: string) => {
    const res = await api.app.inject({ method: 'GET', url: `${base}${url}`, headers });
    validator.assertValid(`${base}${url}`, 'GET', res.statusCode, res.json());
    return res;
  };

  const battery = device('battery', 5, 30, t0 - 10_000, {
    soe: 80,
    ratedEnergy: 10_000,
    powerDc: 1000,
  });
  const battery2 = device('battery', 2, 30, t0 - 200_000, {
    soe: 40,
    ratedEnergy: 10_000,
    powerDc: -500,
  });
  const meter = device('energyMeter', 9, 30, t0 - 20_000, { powerAc: -1500 });
  const inverter = device('inverter', 3, 30, t0 - 5_000, {
    powerAc: 2500.4,
    powerDcPvTotal: 3000,
    status: { rawValue: 4, name: 'MPPT' },
  });
  const offlineRelay = device('relay', 1, 30, t0 - (windowS + 60) * 1000);
  // A device lives in one installation at a time: installation 12 gets a relay of its own.
  const otherOfflineRelay = device('relay', 4, 12, t0 - (windowS + 60) * 1000);
  // Installation 40: ids whose text order differs from their numeric order, non-ASCII values.
  const mixed = [
    { category: 'relay', record: device('relay', 100, 40, t0 - 1_000) },
    { category: 'inverter', record: device('inverter', 10, 40, t0 - 1_000, { model: 'Wärme ☀' }) },
    { category: 'evCharger', record: device('evCharger', 3, 40, t0 - 1_000) },
    { category: 'inverter', record: device('inverter', 9, 40, t0 - 1_000, { model: 'Ōsaka' }) },
    { category: 'relay', record: device('relay', 20, 40, t0 - 1_000) },
  ] as const;

  beforeAll(async () => {
    await api.ready();
    for (const i of inst) await api.seed.installation(i);
    await api.seed.liveKey(key, { app: 1, installations: inst });
    await api.seed.devices(
      30,
      [
        { category: 'battery', record: battery },
        { category: 'battery', record: battery2 },
        { category: 'energyMeter', record: meter },
        { category: 'inverter', record: inverter },
        { category: 'relay', record: offlineRelay },
      ],
      t0,
      windowS,
    );
    await api.seed.devices(12, [{ category: 'relay', record: otherOfflineRelay }], t0, windowS);
    await api.seed.devices(40, mixed, t0, windowS);
  });
  afterAll(() => api.close());

  it('lists installations by ascending id, exactly as stored', async () => {
    const res = await get('/getInstallations');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    const sorted = [...inst].sort((a, b) => a.id - b.id).map(serializeInstallation);
    const expected = `{"valid":true,"installations":[${sorted.join(',')}]}`;
    expect(res.body).toBe(expected);
    expect(res.rawPayload.equals(Buffer.from(expected, 'utf8'))).toBe(true);
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(expected)));
    expect(res.json().installations[0].creationDate).toBeNull();
    expect(res.json().installations[1].creationDate).toBe('2024-01-02T03:04:05+00:00');
  });

  it('serves every category, each by ascending device id, offline devices included', async () => {
    const res = await get('/getInstallationDevices?installationId=30');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Object.keys(body)).toEqual([
      'valid',
      'installationId',
      'inverters',
      'batteries',
      'energyMeters',
      'evChargers',
      'relays',
      'boilers',
    ]);
    expect(body.batteries.map((b: { id: number }) => b.id)).toEqual([2, 5]);
    expect(body.relays).toHaveLength(1);
    expect(body.evChargers).toEqual([]);
    expect(Object.keys(body.inverters[0])).toEqual(DEVICE_FIELD_NAMES.inverter);
    expect(res.body).toContain(serializeDevice('battery', battery));
    expect(body.inverters[0].lastSeenDate).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$/);
  });

  it('writes the stored device bytes exactly, by category in spec order, then numeric id', async () => {
    const res = await get('/getInstallationDevices?installationId=40');
    const stored = (i: number) => {
      const d = mixed[i] as (typeof mixed)[number];
      return serializeDevice(d.category, d.record);
    };
    const expected =
      `{"valid":true,"installationId":40,"inverters":[${stored(3)},${stored(1)}],` +
      `"batteries":[],"energyMeters":[],"evChargers":[${stored(2)}],` +
      `"relays":[${stored(4)},${stored(0)}],"boilers":[]}`;
    expect(res.body).toBe(expected);
    expect(res.rawPayload.equals(Buffer.from(expected, 'utf8'))).toBe(true);
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(expected)));
    expect(res.headers['content-type']).toMatch(/^application\/json/);
  });

  it('serves empty arrays for an installation without devices', async () => {
    const res = await get('/getInstallationDevices?installationId=7');
    expect(res.body).toBe(
      '{"valid":true,"installationId":7,"inverters":[],"batteries":[],"energyMeters":[],"evChargers":[],"relays":[],"boilers":[]}',
    );
  });

  it('serves the stored flow over online devices; data null when none is online', async () => {
    const res = await get('/getInstallationCurrentEnergyFlow?installationId=30');
    expect(res.json()).toEqual({
      valid: true,
      installationId: 30,
      data: {
        inverterPower: 2500,
        solarPower: 3000,
        batteryPower: 500,
        batterySoe: 60,
        gridPower: 1500,
        housePower: 4000,
        evChargerPower: null,
        boilerPower: null,
        lastUpdated: '2026-01-15T11:59:55+00:00',
      },
    });
    const offline = await get('/getInstallationCurrentEnergyFlow?installationId=12');
    expect(offline.body).toBe('{"valid":true,"installationId":12,"data":null}');
    const none = await get('/getInstallationCurrentEnergyFlow?installationId=7');
    expect(none.body).toBe('{"valid":true,"installationId":7,"data":null}');
  });

  it('never counts a device that went offline by time alone: recomputes past validUntil', async () => {
    // battery2 was seen 200 s before t0: offline once 100 s more (+1 ms) have passed.
    nowMs = t0 + (windowS - 200) * 1000 + 1;
    const later = await get('/getInstallationCurrentEnergyFlow?installationId=30');
    expect(later.json().data).toMatchObject({ batteryPower: 1000, batterySoe: 80 });
    nowMs = t0 + windowS * 1000 + 60_000;
    const allGone = await get('/getInstallationCurrentEnergyFlow?installationId=30');
    expect(allGone.json().data).toBeNull();
    nowMs = t0;
    const stored = await get('/getInstallationCurrentEnergyFlow?installationId=30');
    expect(stored.json().data.batterySoe).toBe(60);
  });
});
