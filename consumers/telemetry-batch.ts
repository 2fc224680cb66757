import { parseDateTime } from '../src/domain/date-time.js';
import type { RejectReason } from '../src/domain/dead-letter.js';
import type { DeviceCategory } from '../src/domain/device-fields.js';
import {
  applyDeviceState,
  type DeviceMeta,
  type DeviceRecord,
  futureSkewRejection,
  readStoredDevice,
  serializeDevice,
} from '../src/domain/device-record.js';
import type { TelemetryEvent } from '../src/domain/events.js';
import type { DeviceIndexEntry, TelemetryView } from '../src/read-model/device-store.js';
import { deviceField } from '../src/read-model/keys.js';

// Pure core of the telemetry projector: applies a batch's events, in log order, to a snapshot of
// the devices they touch, and says what to write. I/O lives in src/read-model/device-store.ts.

export type EventOutcome =
  | {
      readonly kind: 'applied';
      readonly nulledPercentFields: readonly string[];
      readonly moved: boolean;
    }
  | { readonly kind: 'stale' }
  | { readonly kind: 'rejected'; readonly reason: RejectReason; readonly detail: string };

export interface TelemetryPlan {
  readonly outcomes: EventOutcome[];
  /** installationId -> field -> new JSON, or null to delete the field. */
  readonly deviceWrites: Map<number, Map<string, string | null>>;
  /** device field -> new index entry. */
  readonly indexWrites: Map<string, DeviceIndexEntry>;
  /** Installations whose flow must be recomputed. */
  readonly dirty: Set<number>;
  /** The records written, by their JSON, so the flow does not parse them again. */
  readonly records: Map<string, DeviceRecord>;
  /** installationId -> indexes (into the batch's events) of the events that wrote to it. */
  readonly touchedBy: Map<number, Set<number>>;
}

export interface ApplyClock {
  readonly nowMs: number;
  readonly futureSkewSeconds: number;
}

export function deviceFieldOf(event: TelemetryEvent): string {
  return deviceField(event.category, event.deviceId);
}

/** Mutates `view` so that later events of the batch see earlier ones. */
export function planTelemetryBatch(
  view: TelemetryView,
  events: readonly TelemetryEvent[],
  clock: ApplyClock,
): TelemetryPlan {
  const plan: TelemetryPlan = {
    outcomes: [],
    deviceWrites: new Map(),
    indexWrites: new Map(),
    dirty: new Set(),
    records: new Map(),
    touchedBy: new Map(),
  };
  let current = 0;
  const setDevice = (inst: number, field: string, record: Written | null) => {
    const json = record === null ? null : serializeDevice(record.category, record.record);
    if (record !== null && json !== null) plan.records.set(json, record.record);
    const touched = plan.touchedBy.get(inst) ?? new Set<number>();
    plan.touchedBy.set(inst, touched.add(current));
    const hash = view.devices.get(inst) ?? new Map<string, string>();
    view.devices.set(inst, hash);
    if (json === null) hash.delete(field);
    else hash.set(field, json);
    const writes = plan.deviceWrites.get(inst) ?? new Map<string, string | null>();
    plan.deviceWrites.set(inst, writes);
    writes.set(field, json);
    plan.dirty.add(inst);
  };
  const setIndex = (field: string, entry: DeviceIndexEntry) => {
    view.index.set(field, entry);
    plan.indexWrites.set(field, entry);
  };

  for (const [i, event] of events.entries()) {
    current = i;
    try {
      plan.outcomes.push(
        event.type === 'device.state'
          ? applyState(view, event, clock, setDevice, setIndex)
          : applyRemoval(view, event, clock, setDevice, setIndex),
      );
    } catch (error) {
      plan.outcomes.push({
        kind: 'rejected',
        reason: 'processing_error',
        detail: (error as Error).message,
      });
    }
  }
  return plan;
}

interface Written {
  readonly category: DeviceCategory;
  readonly record: DeviceRecord;
}
type SetDevice = (inst: number, field: string, record: Written | null) => void;
type SetIndex = (field: string, entry: DeviceIndexEntry) => void;

/** Where the device lives now: its index, or (without one) the event's installation. */
function locate(view: TelemetryView, field: string, eventInst: number) {
  const entry = view.index.get(field) ?? null;
  const inst = entry ? entry.inst : view.devices.get(eventInst)?.has(field) ? eventInst : null;
  const json = inst === null ? undefined : view.devices.get(inst)?.get(field);
  return { entry, inst: json === undefined ? null : inst, json };
}

function applyState(
  view: TelemetryView,
  event: Extract<TelemetryEvent, { type: 'device.state' }>,
  clock: ApplyClock,
  setDevice: SetDevice,
  setIndex: SetIndex,
): EventOutcome {
  const field = deviceFieldOf(event);
  const { entry, inst, json } = locate(view, field, event.installationId);
  const observedMs = parseDateTime(event.observedAt) ?? Number.NaN;
  if (entry?.removed != null && observedMs < entry.removed) return { kind: 'stale' };
  if (deletedSince(view, event.installationId, observedMs)) return { kind: 'stale' };
  const current = json === undefined ? null : readStoredDevice(event.category, json);
  const meta: DeviceMeta | undefined =
    current && entry?.first != null && entry.last != null
      ? { firstSeenMs: entry.first, lastSeenMs: entry.last }
      : undefined;
  const result = applyDeviceState(current, event, clock, meta);
  if (result.kind === 'rejected') return result;
  if (result.kind === 'stale') {
    if (result.firstSeenLowered && inst !== null) {
      setDevice(inst, field, { category: event.category, record: result.record });
      setIndex(field, { ...indexOf(entry, inst), first: result.meta.firstSeenMs });
    }
    return { kind: 'stale' };
  }
  const moved = inst !== null && inst !== event.installationId;
  if (moved) setDevice(inst, field, null);
  setDevice(event.installationId, field, { category: event.category, record: result.record });
  setIndex(field, {
    inst: event.installationId,
    first: result.meta.firstSeenMs,
    last: result.meta.lastSeenMs,
    removed: entry?.removed ?? null,
  });
  return { kind: 'applied', nulledPercentFields: result.nulledPercentFields, moved };
}

/** The installation was deleted at or after `atMs`: the event predates the deletion. */
function deletedSince(view: TelemetryView, installationId: number, atMs: number): boolean {
  const deletedAt = view.deletedAt.get(installationId);
  return deletedAt !== undefined && atMs <= deletedAt;
}

function indexOf(entry: DeviceIndexEntry | null, inst: number): DeviceIndexEntry {
  return entry ?? { inst, first: null, last: null, removed: null };
}

function applyRemoval(
  view: TelemetryView,
  event: Extract<TelemetryEvent, { type: 'device.removed' }>,
  clock: ApplyClock,
  setDevice: SetDevice,
  setIndex: SetIndex,
): EventOutcome {
  const field = deviceFieldOf(event);
  const occurredMs = parseDateTime(event.occurredAt);
  if (occurredMs === null) throw new RangeError(`occurredAt not validated: ${event.occurredAt}`);
  const skewed = futureSkewRejection('occurredAt', event.occurredAt, occurredMs, clock);
  if (skewed) return skewed;
  // The installation's deletion already removed the device.
  if (deletedSince(view, event.installationId, occurredMs)) return { kind: 'stale' };
  const { entry, inst } = locate(view, field, event.installationId);
  if (entry?.last != null && occurredMs < entry.last) return { kind: 'stale' };
  if (entry?.removed != null && occurredMs < entry.removed) return { kind: 'stale' };
  if (inst !== null) setDevice(inst, field, null);
  setIndex(field, { inst: null, first: null, last: null, removed: occurredMs });
  return { kind: 'applied', nulledPercentFields: [], moved: false };
}
