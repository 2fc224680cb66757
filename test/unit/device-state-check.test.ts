import { describe, expect, it } from 'vitest';
import {
  DEVICE_CATEGORIES,
  type FieldSpec,
  INGEST_FIELDS,
} from '../../src/domain/device-fields.js';
import { surelyValidDeviceState } from '../../src/domain/device-state-check.js';
import { parseTelemetryMessage } from '../../src/domain/event-parse.js';
import { DEVICE_STATE_SCHEMAS } from '../../src/domain/events.js';
import { createRng } from '../../tools/sim/random.js';

// The fast path may only ever accept what zod accepts, and must accept the ordinary events.

const rng = createRng(77);

const VALUES: readonly unknown[] = [
  null,
  0,
  -0,
  -1,
  7,
  1.5,
  -2.25,
  2 ** 53,
  2 ** 53 - 1,
  -(2 ** 53),
  1e308,
  'x',
  '',
  '7',
  true,
  false,
  [],
  [true, false],
  [null, true],
  [1],
  ['true'],
  {},
  { a: 1 },
];

const DATES: readonly unknown[] = [
  '2024-03-01T10:00:00Z',
  '2024-03-01T10:00:00.123456789Z',
  '2024-03-01T10:00:00+02:00',
  '2024-03-01T10:00:00-23:59',
  '2024-03-01T10:00:00+24:00',
  '2024-03-01T10:00:00+02:60',
  '2024-03-01T10:00:00+0200',
  '2024-03-01T10:00:00',
  '2024-03-01T10:00Z',
  '2024-03-01t10:00:00z',
  '2024-03-01 10:00:00Z',
  '2024-02-29T00:00:00Z',
  '2023-02-29T00:00:00Z',
  '1900-02-29T00:00:00Z',
  '2000-02-29T00:00:00Z',
  '2024-04-31T00:00:00Z',
  '2024-13-01T00:00:00Z',
  '2024-03-01T24:00:00Z',
  '2024-03-01T23:60:00Z',
  '2024-03-01T23:59:60Z',
  '0000-01-01T00:00:00Z',
  '0000-01-01T00:00:00+01:00',
  '9999-12-31T23:59:59Z',
  '9999-12-31T23:59:59-01:00',
  '2024-03-01T10:00:00.Z',
  '２０２４-03-01T10:00:00Z',
  20240301,
  null,
];

const IDS: readonly unknown[] = [1, 42, 0, -1, 1.5, 2 ** 53 - 1, 2 ** 53, '1', null, true];

function validValue(spec: FieldSpec): unknown {
  switch (spec.kind) {
    case 'integer':
    case 'sunspec':
      return rng.int(0, 5000);
    case 'number':
      return rng.between(-5000, 5000);
    case 'string':
      return `s${rng.int(0, 99)}`;
    case 'boolean':
      return rng.chance(0.5);
    case 'booleanArray':
      return [true, false];
    case 'nullableBooleanArray':
      return [null, true];
    default:
      return rng.pick(['on', 3, true, null]);
  }
}

function event(category: string, state: unknown, over: Record<string, unknown> = {}) {
  return {
    type: 'device.state',
    installationId: 42,
    category,
    deviceId: 1001,
    observedAt: '2024-03-01T10:00:00Z',
    state,
    ...over,
  };
}

function randomEvent(): Record<string, unknown> {
  const category = rng.pick(DEVICE_CATEGORIES);
  const state: Record<string, unknown> = {};
  for (const spec of INGEST_FIELDS[category]) {
    if (rng.chance(0.5)) state[spec.name] = rng.chance(0.9) ? validValue(spec) : rng.pick(VALUES);
  }
  if (rng.chance(0.2)) state.vendorExtra = rng.pick(VALUES);
  const over: Record<string, unknown> = { extraTopLevel: 1 };
  if (rng.chance(0.1)) over.installationId = rng.pick(IDS);
  if (rng.chance(0.1)) over.deviceId = rng.pick(IDS);
  if (rng.chance(0.2)) over.observedAt = rng.pick(DATES);
  const body = rng.chance(0.03) ? rng.pick([null, [], 'x', 5]) : state;
  return event(category, body, over);
}

describe('surelyValidDeviceState', () => {
  it('accepts only events zod accepts, and most valid ones', () => {
    let fast = 0;
    let valid = 0;
    for (let n = 0; n < 20_000; n++) {
      // Through JSON, as the consumer sees them.
      const obj = JSON.parse(JSON.stringify(randomEvent())) as Record<string, unknown>;
      const category = obj.category as (typeof DEVICE_CATEGORIES)[number];
      const zodOk = DEVICE_STATE_SCHEMAS[category].safeParse(obj).success;
      const sure = surelyValidDeviceState(obj, category) !== null;
      if (sure && !zodOk)
        throw new Error(`fast path accepted what zod rejects: ${JSON.stringify(obj)}`);
      if (zodOk) valid++;
      if (sure) fast++;
    }
    expect(valid).toBeGreaterThan(5_000);
    expect(fast).toBe(valid);
  });

  it('agrees with zod on every date-time and id case', () => {
    for (const observedAt of DATES) {
      const obj = event('battery', { soe: 1 }, { observedAt });
      expect([observedAt, surelyValidDeviceState(obj, 'battery') !== null]).toEqual([
        observedAt,
        DEVICE_STATE_SCHEMAS.battery.safeParse(obj).success,
      ]);
    }
    for (const id of IDS) {
      for (const over of [{ installationId: id }, { deviceId: id }]) {
        const obj = event('relay', {}, over);
        expect(surelyValidDeviceState(obj, 'relay') !== null).toBe(
          DEVICE_STATE_SCHEMAS.relay.safeParse(obj).success,
        );
      }
    }
  });

  it('agrees with zod on every value of every field', () => {
    for (const category of DEVICE_CATEGORIES) {
      for (const spec of INGEST_FIELDS[category]) {
        for (const v of VALUES) {
          const obj = event(category, { [spec.name]: v });
          expect([category, spec.name, v, surelyValidDeviceState(obj, category) !== null]).toEqual([
            category,
            spec.name,
            v,
            DEVICE_STATE_SCHEMAS[category].safeParse(obj).success,
          ]);
        }
      }
    }
  });

  it('leaves the parse result as zod made it', () => {
    for (let n = 0; n < 2_000; n++) {
      const text = JSON.stringify(randomEvent());
      const parsed = parseTelemetryMessage(text);
      const obj = JSON.parse(text) as Record<string, unknown>;
      const category = obj.category as (typeof DEVICE_CATEGORIES)[number];
      const zod = DEVICE_STATE_SCHEMAS[category].safeParse(obj);
      expect(parsed.ok).toBe(zod.success);
      if (parsed.ok && zod.success && parsed.event.type === 'device.state') {
        const { installationId, deviceId, observedAt } = zod.data;
        expect(parsed.event).toMatchObject({ installationId, deviceId, observedAt, category });
        for (const [k, v] of Object.entries(parsed.event.state)) {
          expect(v).toEqual((zod.data.state as Record<string, unknown>)[k]);
        }
      }
    }
  });
});
