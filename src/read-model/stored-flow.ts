import type { DeviceRecord } from '../domain/device-record.js';
import { computeEnergyFlow, type EnergyFlow, type FlowDevice } from '../domain/energy-flow.js';
import { parseDeviceField } from './keys.js';

// The one way to compute a flow from an installation's stored devices hash: the consumers use it
// when they write flows, the API when a stored flow has passed its validity.

/**
 * `entries`: the devices hash as (field `<category>:<id>`, stored JSON) pairs; `parsed`: records
 * the caller already holds, by their JSON. Throws when a stored value is not JSON.
 */
export function flowFromStoredDevices(
  entries: Iterable<readonly [string, string]>,
  nowMs: number,
  onlineWindowSeconds: number,
  parsed?: ReadonlyMap<string, DeviceRecord>,
): EnergyFlow {
  const devices: FlowDevice[] = [];
  for (const [field, json] of entries) {
    const device = parseDeviceField(field);
    if (device) {
      const record = parsed?.get(json) ?? (JSON.parse(json) as DeviceRecord);
      devices.push({ category: device.category, record });
    }
  }
  return computeEnergyFlow(devices, nowMs, onlineWindowSeconds);
}

/** Flat HGETALL-style `[field, value, field, value, …]` as pairs. */
export function* fieldValuePairs(flat: readonly string[]): Generator<readonly [string, string]> {
  for (let i = 0; i + 1 < flat.length; i += 2) yield [flat[i] as string, flat[i + 1] as string];
}
