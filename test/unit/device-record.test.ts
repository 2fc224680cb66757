import { describe, expect, it } from 'vitest';
import type { DeviceCategory } from '../../src/domain/device-fields.js';
import { DEVICE_FIELD_NAMES } from '../../src/domain/device-fields.js';
import {
  type ApplyResult,
  applyDeviceState,
  type DeviceRecord,
  parseStoredDevice,
  readStoredDevice,
  serializeDevice,
} from '../../src/domain/device-record.js';
import type { DeviceState, DeviceStateEvent } from '../../src/domain/events.js';

const T0 = Date.UTC(2024, 2, 1, 10, 0, 0);
const iso = (ms: number) => new Date(ms).toISOString();
const opts = { nowMs: T0 + 3_600_000, futureSkewSeconds: 300 };

const event = (
  state: DeviceState,
  observedMs: number,
  over: Partial<DeviceStateEvent> = {},
): DeviceStateEvent => ({
  type: 'device.state',
  installationId: 42,
  category: 'battery',
  deviceId: 1001,
  observedAt: iso(observedMs),
  state,
  ...over,
});

function applied(r: ApplyResult) {
  if (r.kind !== 'applied') throw new Error(`expected applied, got ${JSON.stringify(r)}`);
  return r;
}

const create = (state: DeviceState, observedMs = T0, category: DeviceCategory = 'battery') =>
  applied(applyDeviceState(null, event(state, observedMs, { category }), opts));

describe('applyDeviceState: creation', () => {
  it('builds a full record: owned fields set, never-reported fields null', () => {
    const r = create({ soe: 50, powerDc: 100 });
    expect(Object.keys(r.record)).toEqual(DEVICE_FIELD_NAMES.battery);
    expect(r.record.id).toBe(1001);
    expect(r.record.installationId).toBe(42);
    expect(r.record.firstSeenDate).toBe('2024-03-01T10:00:00+00:00');
    expect(r.record.lastSeenDate).toBe('2024-03-01T10:00:00+00:00');
    expect(r.record.soe).toBe(50);
    expect(r.record.gatewayId).toBeNull();
    expect(r.record.ratedEnergy).toBeNull();
    expect(r.meta).toEqual({ firstSeenMs: T0, lastSeenMs: T0 });
  });

  it.each([
    ['evCharger', { mode: 'eco' }, 'supportsBiDirectionalCharging'],
    ['relay', { relayCount: 2, currentState: [true, false] }, 'desiredState'],
    ['boiler', { powerAc: 5 }, 'boilerMode'],
    ['energyMeter', { powerAc: 5 }, 'options'],
  ] as const)('rejects creating a %s without its required fields', (category, state, missing) => {
    const r = applyDeviceState(null, event(state, T0, { category }), opts);
    expect(r.kind).toBe('rejected');
    if (r.kind === 'rejected') {
      expect(r.reason).toBe('missing_required_fields');
      expect(r.detail).toContain(missing);
    }
  });

  it('creates a device of each category once its required fields are present', () => {
    expect(
      create({ mode: 'eco', supportsBiDirectionalCharging: false }, T0, 'evCharger').record.mode,
    ).toBe('eco');
    const relay = create(
      { relayCount: 2, currentState: [true, false], desiredState: [null, true] },
      T0,
      'relay',
    );
    expect(relay.record.desiredState).toEqual([null, true]);
    expect(create({ boilerMode: 'auto' }, T0, 'boiler').record.boilerMode).toBe('auto');
    expect(create({ options: '' }, T0, 'energyMeter').record.options).toBe('');
    expect(create({}, T0, 'inverter').record.status).toBeNull();
  });

  it('does not require the non-nullable fields again once the device exists', () => {
    const first = create({ mode: 'eco', supportsBiDirectionalCharging: true }, T0, 'evCharger');
    const r = applied(
      applyDeviceState(
        first.record,
        event({ powerAc: 7 }, T0 + 1000, { category: 'evCharger' }),
        opts,
        first.meta,
      ),
    );
    expect(r.record.mode).toBe('eco');
    expect(r.record.supportsBiDirectionalCharging).toBe(true);
    expect(r.record.powerAc).toBe(7);
  });
});

describe('applyDeviceState: partial updates', () => {
  it('overwrites present fields, nulls explicit nulls, keeps absent ones', () => {
    const first = create({ soe: 50, powerDc: 100, temperature: 20 });
    const r = applied(
      applyDeviceState(
        first.record,
        event({ soe: 60, powerDc: null }, T0 + 1000),
        opts,
        first.meta,
      ),
    );
    expect(r.record.soe).toBe(60);
    expect(r.record.powerDc).toBeNull();
    expect(r.record.temperature).toBe(20);
    expect(r.record.lastSeenDate).toBe('2024-03-01T10:00:01+00:00');
    expect(r.record.firstSeenDate).toBe('2024-03-01T10:00:00+00:00');
  });

  it('lets an empty state refresh lastSeenDate only', () => {
    const first = create({ soe: 50 });
    const r = applied(applyDeviceState(first.record, event({}, T0 + 60_000), opts, first.meta));
    expect(r.record.soe).toBe(50);
    expect(r.record.lastSeenDate).toBe('2024-03-01T10:01:00+00:00');
  });
});

describe('applyDeviceState: ordering', () => {
  it('ignores an older event as stale, keeping the state', () => {
    const first = create({ soe: 50 }, T0 + 10_000);
    const r = applyDeviceState(first.record, event({ soe: 10 }, T0 + 5_000), opts, first.meta);
    expect(r.kind).toBe('stale');
    if (r.kind === 'stale') {
      expect(r.record.soe).toBe(50);
      expect(r.record.lastSeenDate).toBe(first.record.lastSeenDate);
    }
  });

  it('lowers firstSeenDate from a stale event older than anything seen', () => {
    const first = create({ soe: 50 }, T0 + 10_000);
    const r = applyDeviceState(first.record, event({ soe: 10 }, T0), opts, first.meta);
    expect(r.kind).toBe('stale');
    if (r.kind !== 'stale') return;
    expect(r.firstSeenLowered).toBe(true);
    expect(r.record.firstSeenDate).toBe('2024-03-01T10:00:00+00:00');
    expect(r.record.soe).toBe(50);
    expect(r.meta).toEqual({ firstSeenMs: T0, lastSeenMs: T0 + 10_000 });
    const again = applyDeviceState(r.record, event({}, T0 + 1000), opts, r.meta);
    expect(again.kind === 'stale' && again.firstSeenLowered).toBe(false);
  });

  it('applies an event with an equal observedAt: later in the log wins', () => {
    const first = create({ soe: 50 });
    const r = applied(applyDeviceState(first.record, event({ soe: 51 }, T0), opts, first.meta));
    expect(r.record.soe).toBe(51);
  });

  it('orders by milliseconds kept in meta, not the whole-second date-times', () => {
    const first = create({ soe: 50 }, T0 + 500);
    expect(first.record.lastSeenDate).toBe('2024-03-01T10:00:00+00:00');
    const r = applyDeviceState(first.record, event({ soe: 10 }, T0 + 200), opts, first.meta);
    expect(r.kind).toBe('stale');
  });

  it('falls back to the record’s own date-times when no meta is kept', () => {
    const first = create({ soe: 50 }, T0 + 10_000);
    expect(applyDeviceState(first.record, event({ soe: 1 }, T0 + 5_000), opts).kind).toBe('stale');
    expect(applyDeviceState(first.record, event({ soe: 1 }, T0 + 11_000), opts).kind).toBe(
      'applied',
    );
  });

  it('rejects an event more than the skew in the future, accepts one just within', () => {
    const now = T0;
    const within = applyDeviceState(null, event({}, now + 300_000), {
      nowMs: now,
      futureSkewSeconds: 300,
    });
    expect(within.kind).toBe('applied');
    const beyond = applyDeviceState(null, event({}, now + 300_001), {
      nowMs: now,
      futureSkewSeconds: 300,
    });
    expect(beyond.kind === 'rejected' && beyond.reason).toBe('future_observed_at');
  });

  it('moves the device to the installation of its latest applied event', () => {
    const first = create({ soe: 50 });
    const r = applied(
      applyDeviceState(
        first.record,
        event({}, T0 + 1000, { installationId: 43 }),
        opts,
        first.meta,
      ),
    );
    expect(r.record.installationId).toBe(43);
    expect(first.record.installationId).toBe(42);
  });
});

describe('applyDeviceState: clean-ups', () => {
  it('removes NUL bytes and surrounding white space from the four text fields', () => {
    const r = create({
      manufacturer: ' BYD\u0000 ',
      model: '\tHVS\u0000 7.7\n',
      version: '\u00001.2',
      serialNumber: '   ',
    });
    expect(r.record.manufacturer).toBe('BYD');
    expect(r.record.model).toBe('HVS 7.7');
    expect(r.record.version).toBe('1.2');
    expect(r.record.serialNumber).toBeNull();
  });

  it('does not trim other strings', () => {
    const r = create({ vendorStatusString: ' ok ' }, T0, 'inverter');
    expect(r.record.vendorStatusString).toBe(' ok ');
  });

  it('normalizes the inverter status via SunSpec', () => {
    expect(create({ status: 4 }, T0, 'inverter').record.status).toEqual({
      rawValue: 4,
      name: 'MPPT',
    });
    expect(create({ status: 42 }, T0, 'inverter').record.status).toBeNull();
    expect(create({ status: null }, T0, 'inverter').record.status).toBeNull();
    expect(create({ status: 42 }, T0, 'battery').record.status).toBe(42);
  });

  it('nulls out-of-range percent fields, keeps the rest, and reports them', () => {
    const r = create({ soe: 101, soh: -1, minSoe: 0, maxSoe: 100, powerDc: 5 });
    expect(r.record.soe).toBeNull();
    expect(r.record.soh).toBeNull();
    expect(r.record.minSoe).toBe(0);
    expect(r.record.maxSoe).toBe(100);
    expect(r.record.powerDc).toBe(5);
    expect(r.nulledFields).toEqual(['soe', 'soh']);
    const next = applied(applyDeviceState(r.record, event({ minSoe: 200 }, T0 + 1), opts, r.meta));
    expect(next.record.minSoe).toBeNull();
    expect(next.nulledFields).toEqual(['minSoe']);
  });

  it('nulls link ids below 1 and negative magnitudes the same way, keeps 0 and 1', () => {
    const battery = create({
      gatewayId: 0,
      inverterId: -3,
      maxChargeContinuousPower: -5,
      maxDischargeContinuousPower: 0,
    });
    expect(battery.record).toMatchObject({
      gatewayId: null,
      inverterId: null,
      maxChargeContinuousPower: null,
      maxDischargeContinuousPower: 0,
    });
    expect(battery.nulledFields).toEqual(['gatewayId', 'inverterId', 'maxChargeContinuousPower']);
    const inverter = create(
      { gatewayId: 1, maxChargePower: -1, maxDischargePower: 0 },
      T0,
      'inverter',
    );
    expect(inverter.record).toMatchObject({
      gatewayId: 1,
      maxChargePower: null,
      maxDischargePower: 0,
    });
    expect(inverter.nulledFields).toEqual(['maxChargePower']);
  });
});

describe('serializeDevice / parseStoredDevice', () => {
  it('writes every documented key in order and nothing else', () => {
    const r = create({ soe: 50 });
    const json = serializeDevice('battery', { ...r.record, extra: 1 } as DeviceRecord);
    expect(Object.keys(JSON.parse(json))).toEqual(DEVICE_FIELD_NAMES.battery);
    expect(JSON.parse(json).soe).toBe(50);
  });

  it('refuses to write a record that lacks a required key', () => {
    const r = create({ soe: 50 });
    const { soh: _, ...partial } = r.record;
    expect(() => serializeDevice('battery', partial)).toThrow(/soh/);
    const relay = create(
      { relayCount: 1, currentState: [true], desiredState: [null] },
      T0,
      'relay',
    );
    expect(() => serializeDevice('relay', { ...relay.record, relayCount: null })).toThrow(
      /relayCount/,
    );
  });

  it('reads a stored record back to the same value, for every category', () => {
    const cases: Array<[DeviceCategory, DeviceState]> = [
      ['inverter', { status: 7, powerDcPv3: 12.5, manufacturer: 'SMA' }],
      ['battery', { soe: 50.5, minSoe: 10 }],
      ['energyMeter', { options: 'x', powerAc: -3 }],
      ['evCharger', { mode: 'eco', supportsBiDirectionalCharging: false }],
      ['relay', { relayCount: 2, currentState: [true, false], desiredState: [null, true] }],
      ['boiler', { boilerMode: 'auto', operationMode: 3, loadState: 'on' }],
    ];
    for (const [category, state] of cases) {
      const r = create(state, T0, category);
      const json = serializeDevice(category, r.record);
      const back = parseStoredDevice(category, json);
      expect(back).toEqual(r.record);
      expect(serializeDevice(category, back)).toBe(json);
    }
  });

  it('throws on a stored record that is not a valid record', () => {
    expect(() => parseStoredDevice('battery', '{"id":1}')).toThrow();
    expect(() => parseStoredDevice('battery', 'nope')).toThrow();
  });

  it('reads its own records back without the schema, refusing what is not a record', () => {
    for (const category of ['battery', 'relay'] as const) {
      const r = create(
        category === 'relay' ? { relayCount: 1, currentState: [true], desiredState: [null] } : {},
        T0,
        category,
      );
      const json = serializeDevice(category, r.record);
      expect(readStoredDevice(category, json)).toEqual(parseStoredDevice(category, json));
    }
    for (const bad of ['{"id":1}', '{"not":"a record"}', '[]', 'null', '5']) {
      expect(() => readStoredDevice('battery', bad)).toThrow(TypeError);
    }
    expect(() => readStoredDevice('battery', 'nope')).toThrow(SyntaxError);
    const relay = serializeDevice('battery', create({}, T0, 'battery').record);
    expect(() => readStoredDevice('relay', relay)).toThrow(/relayCount/);
  });

  it('reads back a record stored with its keys reordered or an extra key as its served JSON', () => {
    // The write edge stringifies what it holds as it is: what it read back must be canonical.
    const json = serializeDevice('battery', create({}, T0, 'battery').record);
    const fields = Object.entries(JSON.parse(json) as Record<string, unknown>);
    const reordered = JSON.stringify(Object.fromEntries([...fields].reverse()));
    const extra = JSON.stringify({ ...Object.fromEntries(fields), legacy: true });
    for (const stored of [json, reordered, extra])
      expect(JSON.stringify(readStoredDevice('battery', stored))).toBe(json);
  });
});
