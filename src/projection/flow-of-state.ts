import { computeFlowFromInputs, serializeEnergyFlow } from '../domain/energy-flow.js';
import type { DeviceEntry, StoredFlow } from './installation-state.js';

// The flow an installation serves, from the devices it holds (their flow inputs, in order).

export function flowOfDevices(
  devices: ReadonlyMap<string, DeviceEntry>,
  nowMs: number,
  onlineWindowSeconds: number,
): StoredFlow {
  const inputs = [];
  for (const entry of devices.values()) inputs.push(entry.input);
  const flow = computeFlowFromInputs(inputs, nowMs, onlineWindowSeconds);
  return { data: serializeEnergyFlow(flow.data), validUntilMs: flow.validUntilMs };
}

export const sameFlow = (a: StoredFlow, b: StoredFlow): boolean =>
  a.data === b.data && a.validUntilMs === b.validUntilMs;

/** Time alone changed the flow: a counted device went offline after `validUntilMs`. */
export const flowExpired = (flow: StoredFlow, nowMs: number): boolean =>
  flow.validUntilMs > 0 && flow.validUntilMs < nowMs;
