import { serializeEnergyFlow } from '../../src/domain/energy-flow.js';
import { fieldValuePairs, flowFromStoredDevices } from '../../src/read-model/stored-flow.js';
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
  const flow = flowFromStoredDevices(fieldValuePairs(stored.devices), nowMs, onlineWindowSeconds);
  return serializeEnergyFlow(flow.data);
}
