import {
  type DeviceCategory,
  type FieldSpec,
  INGEST_FIELDS,
  perCategory,
} from '../../src/domain/device-fields.js';
import type { DeviceStateEvent } from '../../src/domain/events.js';
import { createRng, deriveSeed, type Rng } from '../../tools/sim/random.js';
import type { DeviceSpec } from './plan.js';

// Device states for the bench: a full first report (every field of the category set, the
// largest record a device can have) and live updates carrying the measurements that change.

type State = Record<string, unknown>;

const TEXT: Record<string, (rng: Rng) => string> = {
  manufacturer: (rng) => rng.pick(['Fronius', 'SMA', 'BYD', 'Huawei', 'Janitza', 'Shelly']),
  model: (rng) => `Model ${rng.int(100, 999)}`,
  version: (rng) => `${rng.int(1, 4)}.${rng.int(0, 20)}.${rng.int(0, 99)}`,
  serialNumber: (rng) => `SN${rng.int(10_000_000, 99_999_999)}`,
  options: () => 'three-phase',
  mode: (rng) => rng.pick(['eco', 'fast', 'solar']),
  boilerMode: (rng) => rng.pick(['auto', 'manual', 'off']),
};

function fieldValue(spec: FieldSpec, rng: Rng, relayCount: number): unknown {
  if (spec.percent) return spec.kind === 'integer' ? rng.int(5, 95) : round1(rng.between(0, 100));
  switch (spec.kind) {
    // Within the field's range (a magnitude is never negative, an id never 0): the project drops
    // an out-of-range value, and the bench's devices are meant to be valid ones.
    case 'integer':
      return spec.name === 'relayCount'
        ? relayCount
        : rng.int(Math.max(0, spec.range?.min ?? 0), 20_000);
    case 'number':
      return round1(rng.between(Math.max(-5_000, spec.range?.min ?? -5_000), 5_000));
    case 'string':
      return (TEXT[spec.name] ?? ((r: Rng) => `status ${r.int(0, 9)}`))(rng);
    case 'boolean':
      return rng.chance(0.5);
    case 'booleanArray':
      return Array.from({ length: relayCount }, () => rng.chance(0.5));
    case 'nullableBooleanArray':
      return Array.from({ length: relayCount }, () => (rng.chance(0.2) ? null : rng.chance(0.5)));
    case 'sunspec':
      return 4;
    case 'any':
      return rng.int(0, 5);
    case 'dateTime':
      return null;
  }
}

const round1 = (v: number) => Math.round(v * 10) / 10;

export function fullState(seed: number, device: DeviceSpec): State {
  const rng = createRng(deriveSeed(seed, device.deviceId, 11));
  const state: State = {};
  for (const spec of INGEST_FIELDS[device.category]) state[spec.name] = fieldValue(spec, rng, 4);
  return state;
}

/** The measurements a gateway re-sends on every report: up to 12 numbers per category. */
const LIVE: Readonly<Record<DeviceCategory, readonly FieldSpec[]>> = perCategory((c) =>
  INGEST_FIELDS[c].filter((s) => s.kind === 'number').slice(0, 12),
);

export function liveState(rng: Rng, category: DeviceCategory): State {
  const state: State = {};
  for (const spec of LIVE[category]) state[spec.name] = fieldValue(spec, rng, 4);
  if (category === 'relay') state.currentState = [true, false, rng.chance(0.5), false];
  return state;
}

export function stateEvent(
  installationId: number,
  device: DeviceSpec,
  observedMs: number,
  state: State,
): DeviceStateEvent {
  return {
    type: 'device.state',
    installationId,
    category: device.category,
    deviceId: device.deviceId,
    observedAt: new Date(observedMs).toISOString(),
    state: state as DeviceStateEvent['state'],
  };
}
