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
  return currentFlow(stored, nowMs, onlineWindowSeconds).data;
}

/** The served flow data and until when it holds (epoch ms, 0 = until something is written). */
export function currentFlow(
  stored: StoredFlow,
  nowMs: number,
  onlineWindowSeconds: number,
): { readonly data: string; readonly validUntilMs: number } {
  if (stored.devices === null) return { data: stored.data, validUntilMs: stored.validUntilMs };
  const flow = flowFromStoredDevices(fieldValuePairs(stored.devices), nowMs, onlineWindowSeconds);
  return { data: serializeEnergyFlow(flow.data), validUntilMs: flow.validUntilMs };
}
