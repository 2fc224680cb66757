import type { DeviceCategory } from '../domain/device-fields.js';
import type { DeviceRecord } from '../domain/device-record.js';
import { type FlowInput, flowInputOf } from '../domain/energy-flow.js';
import { parseDeviceField } from './keys.js';

// The consumers' compact copy of each device's flow inputs (internal hash flowInputsKey, field
// `<category>:<id>` as in the devices hash), written in the same MULTI as the record: a batch
// recomputes a flow from ~30-byte strings instead of parsing every ~1 KB record of the
// installation. Value: the category's numbers joined by ',' (empty = null, trailing empties
// left out), lastSeen first:
//   inverter   lastSeenMs,powerAc,solar
//   battery    lastSeenMs,powerDc,soe,ratedEnergy
//   relay      lastSeenMs
//   others     lastSeenMs,powerAc
// String(number) and Number(text) round-trip every finite double exactly, so a flow computed
// from these equals computeEnergyFlow over the records, up to the order of the sums (hash order
// differs between the two hashes; so did the old code's, which read the devices hash).

const LAYOUT: Readonly<Record<DeviceCategory, ReadonlyArray<keyof FlowInput>>> = {
  inverter: ['lastSeenMs', 'powerAc', 'solar'],
  battery: ['lastSeenMs', 'powerDc', 'soe', 'ratedEnergy'],
  energyMeter: ['lastSeenMs', 'powerAc'],
  evCharger: ['lastSeenMs', 'powerAc'],
  relay: ['lastSeenMs'],
  boiler: ['lastSeenMs', 'powerAc'],
};

export function encodeFlowInput(input: FlowInput): string {
  // Written per device per batch: built by hand, no array per call.
  const layout = LAYOUT[input.category];
  let out = input.lastSeenMs === null ? '' : String(input.lastSeenMs);
  let pending = '';
  for (let i = 1; i < layout.length; i++) {
    const v = input[layout[i] as keyof FlowInput];
    pending += ',';
    if (v === null) continue;
    out += pending + String(v);
    pending = '';
  }
  return out;
}

/** The stored value of one device's flow inputs. */
export const storedFlowInput = (category: DeviceCategory, record: DeviceRecord): string =>
  encodeFlowInput(flowInputOf(category, record));

const LAYOUTS: ReadonlyMap<string, ReadonlyArray<keyof FlowInput>> = new Map(
  Object.entries(LAYOUT),
);

/** Null for a value that is not a valid encoding (the caller reads the records instead). */
export function decodeFlowInput(field: string, value: string): FlowInput | null {
  const sep = field.indexOf(':');
  const layout = sep < 0 ? undefined : LAYOUTS.get(field.slice(0, sep));
  if (layout === undefined) return null;
  const parts = value.split(',');
  if (parts.length > layout.length) return null;
  const numbers: Array<number | null> = [null, null, null, null];
  for (let i = 0; i < parts.length; i++) {
    const text = parts[i] as string;
    if (text === '') continue;
    const n = Number(text);
    if (!Number.isFinite(n)) return null;
    numbers[i] = n;
  }
  const input: Record<keyof FlowInput, unknown> = {
    category: field.slice(0, sep),
    lastSeenMs: numbers[0],
    powerAc: null,
    solar: null,
    powerDc: null,
    soe: null,
    ratedEnergy: null,
  };
  for (let i = 1; i < layout.length; i++) input[layout[i] as keyof FlowInput] = numbers[i];
  return input as unknown as FlowInput;
}

/**
 * The stored inputs (HGETALL as a flat `[field, value, …]` array) by device field, or null when
 * they do not cover the devices hash (`devicesCount` fields): written before the inputs existed,
 * or by something other than the consumers. The caller then computes from the records and
 * rewrites the inputs.
 */
export function decodeFlowInputs(
  flat: readonly string[],
  devicesCount: number,
): Map<string, FlowInput> | null {
  if (flat.length !== devicesCount * 2) return null;
  const out = new Map<string, FlowInput>();
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const field = flat[i] as string;
    const input = decodeFlowInput(field, flat[i + 1] as string);
    if (input === null) return null;
    out.set(field, input);
  }
  return out;
}

/**
 * The inputs of every record of a devices hash (field, JSON), reusing records the caller holds
 * by their JSON. Throws when a stored value is not JSON; fields naming no category are skipped.
 */
export function flowInputsOfRecords(
  entries: Iterable<readonly [string, string]>,
  parsed?: ReadonlyMap<string, DeviceRecord>,
): Map<string, FlowInput> {
  const out = new Map<string, FlowInput>();
  for (const [field, json] of entries) {
    const device = parseDeviceField(field);
    if (!device) continue;
    const record = parsed?.get(json) ?? (JSON.parse(json) as DeviceRecord);
    out.set(field, flowInputOf(device.category, record));
  }
  return out;
}
