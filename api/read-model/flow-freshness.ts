import { isDeviceCategory } from '../../src/domain/device-fields.js';
import type { DeviceRecord } from '../../src/domain/device-record.js';
import {
  computeEnergyFlow,
  type FlowDevice,
  serializeEnergyFlow,
} from '../../src/domain/energy-flow.js';
import type { StoredFlow } from './api-reader.js';

// The API never serves a flow past its validity: once validUntil has passed (a counted device
// went offline by time alone), the flow is recomputed from the device values read with it.
// Cold path only; the stored bytes are served otherwise.

export function currentFlowData(
  stored: StoredFlow,
  nowMs: number,
  onlineWindowSeconds: number,
): string {
  if (stored.devices === null) return stored.data;
  const devices: FlowDevice[] = [];
  for (let i = 0; i + 1 < stored.devices.length; i += 2) {
    const field = stored.devices[i] as string;
    const category = field.slice(0, field.indexOf(':'));
    if (!isDeviceCategory(category)) continue;
    const record = JSON.parse(stored.devices[i + 1] as string) as DeviceRecord;
    devices.push({ category, record });
  }
  return serializeEnergyFlow(computeEnergyFlow(devices, nowMs, onlineWindowSeconds).data);
}
