import { FlowTotals, serializeEnergyFlow } from '../domain/energy-flow.js';
import type { DeviceEntry, ProjectedFlow } from './installation-state.js';

// The flow an installation serves, from the devices it holds (in order).

export function flowOfDevices(
  devices: ReadonlyMap<string, DeviceEntry>,
  nowMs: number,
  onlineWindowSeconds: number,
): ProjectedFlow {
  const totals = new FlowTotals(nowMs, onlineWindowSeconds);
  // The record's lastSeenDate was written from meta.lastSeenMs: no date to parse back.
  for (const entry of devices.values())
    totals.add(entry.category, entry.record, entry.meta.lastSeenMs);
  const flow = totals.flow();
  return { data: serializeEnergyFlow(flow.data), validUntilMs: flow.validUntilMs };
}

export const sameFlow = (a: ProjectedFlow, b: ProjectedFlow): boolean =>
  a.data === b.data && a.validUntilMs === b.validUntilMs;

/** Time alone changed the flow: a counted device went offline after `validUntilMs`. */
export const flowExpired = (flow: ProjectedFlow, nowMs: number): boolean =>
  flow.validUntilMs > 0 && flow.validUntilMs < nowMs;
