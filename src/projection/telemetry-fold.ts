import { formatDateTime, parseDateTime } from '../domain/date-time.js';
import type { RejectReason } from '../domain/dead-letter.js';
import type { DeviceCategory } from '../domain/device-fields.js';
import {
  applyDeviceState,
  type DeviceMeta,
  type DeviceRecord,
  futureSkewRejection,
} from '../domain/device-record.js';
import type { DeviceRemovedEvent, DeviceStateEvent, TelemetryEvent } from '../domain/events.js';
import type { DeviceReleasedEvent } from './device-released.js';
import { flowOfDevices, sameFlow } from './flow-of-state.js';
import {
  type CarriedDevice,
  type DeviceEntry,
  type DeviceIndexEntry,
  type InstallationState,
  initialState,
  NO_INDEX_ENTRY,
} from './installation-state.js';
import type { IndexOp, InstallationWrite, WritePlan } from './write-plan.js';

// The telemetry projection as a fold without I/O: (states, events) -> (states', writes). Events
// apply in log order; a later event of the batch sees the earlier ones. Everything it needs comes
// in: the states of the installations the events name and the index entries of the devices they
// do not hold (both loaded by the store, src/read-model/installation-load.ts). It takes the
// states it is given and updates their devices in place, so a batch allocates no copy of an
// installation's devices nor a record per event; the caller keeps them only if the writes land.

export type ProjectionEvent = TelemetryEvent | DeviceReleasedEvent;

export type EventOutcome =
  | {
      readonly kind: 'applied';
      readonly nulledFields: readonly string[];
      readonly moved: boolean;
    }
  | { readonly kind: 'stale' }
  /** A device.released event, applied or not: internal, not counted as telemetry. */
  | { readonly kind: 'internal' }
  | { readonly kind: 'rejected'; readonly reason: RejectReason; readonly detail: string };

export interface FoldContext {
  readonly nowMs: number;
  readonly futureSkewSeconds: number;
  readonly onlineWindowSeconds: number;
}

export interface FoldInput {
  /** Every installation the events name; a missing one starts from initialState. */
  readonly states: ReadonlyMap<number, InstallationState>;
  /** Index entries of devices the events' installations do not hold (absent = none stored). */
  readonly index: ReadonlyMap<string, DeviceIndexEntry>;
  /** Records of devices met in another installation than the one holding them (by field). */
  readonly carried?: ReadonlyMap<string, CarriedDevice>;
}

export interface FoldResult {
  readonly outcomes: readonly EventOutcome[];
  readonly plan: WritePlan;
}

export const fieldOf = (category: DeviceCategory, deviceId: number): string =>
  `${category}:${deviceId}`;

export function deviceEntry(
  category: DeviceCategory,
  deviceId: number,
  record: DeviceRecord,
  meta: DeviceMeta,
): DeviceEntry {
  return {
    category,
    deviceId,
    // Valid by construction: from a creating event with every required field, or from a record
    // read back and checked (readStoredDevice). Serialized at the write.
    record,
    meta,
  };
}

/** What a fold did to one installation (its devices map is updated in place). */
interface Work {
  readonly before: InstallationState;
  touched: boolean;
  readonly set: Map<string, DeviceEntry>;
  readonly removed: Set<string>;
  /** Devices it did not hold when the fold began: dropping one again deletes nothing stored. */
  readonly created: Set<string>;
}

export function foldTelemetry(
  input: FoldInput,
  events: readonly ProjectionEvent[],
  ctx: FoldContext,
): FoldResult {
  const run = new FoldRun(input, ctx);
  const outcomes: EventOutcome[] = [];
  for (const event of events) {
    try {
      outcomes.push(
        event.type === 'device.state'
          ? applyState(run, event)
          : event.type === 'device.removed'
            ? applyRemoval(run, event)
            : event.type === 'device.seen'
              ? applySeen(run, event)
              : applyRelease(run, event),
      );
    } catch (error) {
      outcomes.push({
        kind: 'rejected',
        reason: 'processing_error',
        detail: (error as Error).message,
      });
    }
  }
  return { outcomes, plan: run.plan() };
}

/** What one fold works on: the installations it touched, the index as it decided it, releases. */
class FoldRun {
  private readonly work = new Map<number, Work>();
  private readonly index = new Map<string, DeviceIndexEntry>();
  private readonly indexOps = new Map<string, IndexOp[]>();
  private readonly releases: DeviceReleasedEvent[] = [];

  constructor(
    private readonly input: FoldInput,
    readonly ctx: FoldContext,
  ) {}

  /** The last installation asked for: a report's events come one device after the other. */
  private lastWork: Work | undefined;

  workOf(id: number): Work {
    if (this.lastWork?.before.id === id) return this.lastWork;
    let w = this.work.get(id);
    if (!w) {
      w = {
        before: this.input.states.get(id) ?? initialState(id),
        touched: false,
        set: new Map(),
        removed: new Set(),
        created: new Set(),
      };
      this.work.set(id, w);
    }
    this.lastWork = w;
    return w;
  }

  held(id: number, field: string): DeviceEntry | undefined {
    return this.workOf(id).before.devices.get(field);
  }

  private touch(id: number): Work {
    const w = this.workOf(id);
    w.touched = true;
    return w;
  }

  put(id: number, field: string, entry: DeviceEntry): void {
    const w = this.touch(id);
    if (!w.before.devices.has(field) && !w.removed.has(field)) w.created.add(field);
    w.before.devices.set(field, entry);
    w.set.set(field, entry);
    w.removed.delete(field);
  }

  /** A held device's entry after an event updated its record (in place or not). */
  update(id: number, field: string, entry: DeviceEntry, record: DeviceRecord, meta: DeviceMeta) {
    entry.record = record;
    entry.meta.firstSeenMs = meta.firstSeenMs;
    entry.meta.lastSeenMs = meta.lastSeenMs;
    this.touch(id).set.set(field, entry);
  }

  drop(id: number, field: string): void {
    const w = this.touch(id);
    w.before.devices.delete(field);
    w.set.delete(field);
    if (!w.created.delete(field)) w.removed.add(field);
  }

  indexOf(field: string): DeviceIndexEntry {
    return this.index.get(field) ?? this.input.index.get(field) ?? NO_INDEX_ENTRY;
  }

  op(field: string, next: IndexOp, entry: DeviceIndexEntry): void {
    this.index.set(field, entry);
    const ops = this.indexOps.get(field);
    if (ops) ops.push(next);
    else this.indexOps.set(field, [next]);
  }

  internal(
    type: DeviceReleasedEvent['type'],
    installationId: number,
    category: DeviceCategory,
    deviceId: number,
    atMs: number,
    to: number | null,
  ): void {
    this.releases.push({ type, installationId, category, deviceId, atMs, to });
  }

  release(
    from: number,
    category: DeviceCategory,
    deviceId: number,
    atMs: number,
    to: number | null,
  ) {
    this.internal('device.released', from, category, deviceId, atMs, to);
  }

  /** The device as the installation holding it has it: in this fold, else as loaded. */
  carriedFrom(id: number, field: string): CarriedDevice | undefined {
    const there = this.work.has(id) || this.input.states.has(id) ? this.held(id, field) : undefined;
    return there ?? this.input.carried?.get(field);
  }

  deletedSince(id: number, atMs: number): boolean {
    const deletedAt = this.workOf(id).before.deletedAtMs;
    return deletedAt !== null && atMs <= deletedAt;
  }

  plan(): WritePlan {
    const installations = new Map<number, InstallationWrite>();
    for (const [id, w] of this.work) {
      if (!w.touched) continue;
      const { devices } = w.before;
      const flow = flowOfDevices(devices, this.ctx.nowMs, this.ctx.onlineWindowSeconds);
      const changedFlow = sameFlow(flow, w.before.flow) ? null : flow;
      if (w.set.size === 0 && w.removed.size === 0 && changedFlow === null) continue;
      installations.set(id, {
        id,
        expectedRevision: w.before.revision,
        set: w.set,
        removed: w.removed,
        flow: changedFlow,
        next: { ...w.before, revision: w.before.revision + 1, flow },
      });
    }
    return { installations, index: this.indexOps, releases: this.releases };
  }
}

const APPLIED: EventOutcome = { kind: 'applied', nulledFields: [], moved: false };
/** The common outcome is one shared object: nothing nulled, no move. */
const applied = (nulled: readonly string[], moved: boolean): EventOutcome =>
  nulled.length === 0 && !moved ? APPLIED : { kind: 'applied', nulledFields: nulled, moved };
const STALE: EventOutcome = { kind: 'stale' };
const INTERNAL: EventOutcome = { kind: 'internal' };

function applyState(run: FoldRun, event: DeviceStateEvent): EventOutcome {
  const { installationId: inst, category, deviceId } = event;
  const field = fieldOf(category, deviceId);
  const observedMs = parseDateTime(event.observedAt) ?? Number.NaN;
  const mine = run.held(inst, field);
  if (mine === undefined) {
    const entry = run.indexOf(field);
    if (entry.removedMs !== null && observedMs < entry.removedMs) return STALE;
  }
  if (run.deletedSince(inst, observedMs)) return STALE;
  if (mine === undefined) return applyUnheld(run, event, field, observedMs);
  const result = applyDeviceState(mine.record, event, run.ctx, mine.meta, true);
  if (result.kind === 'rejected') return result;
  if (result.kind === 'stale') {
    if (result.firstSeenLowered) run.update(inst, field, mine, result.record, result.meta);
    return STALE;
  }
  run.update(inst, field, mine, result.record, result.meta);
  return applied(result.nulledFields, false);
}

/** A device its installation does not hold: new, or met in another installation than its last. */
function applyUnheld(
  run: FoldRun,
  event: DeviceStateEvent,
  field: string,
  observedMs: number,
): EventOutcome {
  const { installationId: inst, category, deviceId } = event;
  const entry = run.indexOf(field);
  const elsewhere = entry.inst !== null && entry.inst !== inst;
  // Equal observedAt: the later event wins, wherever it names the device (events.md).
  if (elsewhere && entry.lastMs !== null && observedMs < entry.lastMs) {
    // Stale, but proof the device existed then: its holder may lower firstSeenDate.
    run.internal('device.seen', entry.inst as number, category, deviceId, observedMs, null);
    return STALE;
  }
  // A move carries the record on: partial updates merge into what the device reported.
  const carried = elsewhere ? run.carriedFrom(entry.inst as number, field) : undefined;
  const result = applyDeviceState(carried?.record ?? null, event, run.ctx, carried?.meta);
  if (result.kind !== 'applied') return result.kind === 'rejected' ? result : STALE;
  run.put(inst, field, deviceEntry(category, deviceId, result.record, result.meta));
  run.op(
    field,
    { kind: 'claim', inst, atMs: observedMs },
    {
      inst,
      lastMs: observedMs,
      prev: elsewhere ? entry.inst : entry.prev,
      removedMs: entry.removedMs,
    },
  );
  if (elsewhere) run.release(entry.inst as number, category, deviceId, observedMs, inst);
  // A claim recorded by an attempt that stopped before its release went out: send it again.
  else if (entry.inst === inst && entry.lastMs === observedMs && entry.prev !== null)
    run.release(entry.prev, category, deviceId, observedMs, inst);
  return applied(result.nulledFields, elsewhere);
}

function applyRemoval(run: FoldRun, event: DeviceRemovedEvent): EventOutcome {
  const { installationId: inst, category, deviceId } = event;
  const field = fieldOf(category, deviceId);
  const occurredMs = parseDateTime(event.occurredAt);
  if (occurredMs === null) throw new RangeError(`occurredAt not validated: ${event.occurredAt}`);
  const skewed = futureSkewRejection('occurredAt', event.occurredAt, occurredMs, run.ctx);
  if (skewed) return skewed;
  // The installation's deletion already removed the device.
  if (run.deletedSince(inst, occurredMs)) return STALE;
  const entry = run.indexOf(field);
  // What the index script records (claim-device-1.lua): a removal clears the owner unless a
  // newer claim stands.
  const removedEntry: DeviceIndexEntry = {
    inst: entry.lastMs === null || occurredMs >= entry.lastMs ? null : entry.inst,
    lastMs: entry.lastMs,
    prev: entry.prev,
    removedMs: Math.max(entry.removedMs ?? occurredMs, occurredMs),
  };
  const mine = run.held(inst, field);
  if (mine !== undefined) {
    if (occurredMs < mine.meta.lastSeenMs) return STALE;
    run.drop(inst, field);
    run.op(field, { kind: 'remove', inst, atMs: occurredMs }, removedEntry);
    return applied([], false);
  }
  if (entry.removedMs !== null && occurredMs < entry.removedMs) return STALE;
  if (entry.lastMs !== null && occurredMs < entry.lastMs) return STALE;
  // Removed while it lives elsewhere: that installation lets it go.
  if (entry.inst !== null && entry.inst !== inst)
    run.release(entry.inst, category, deviceId, occurredMs, null);
  run.op(field, { kind: 'remove', inst, atMs: occurredMs }, removedEntry);
  return applied([], false);
}

function applyRelease(run: FoldRun, event: DeviceReleasedEvent): EventOutcome {
  const { installationId: inst, category, deviceId, atMs } = event;
  const field = fieldOf(category, deviceId);
  const mine = run.held(inst, field);
  if (mine === undefined) return INTERNAL;
  const last = mine.meta.lastSeenMs;
  const entry = run.indexOf(field);
  /** Lets the device go; the holder learns how early it was seen here, as the claim may have
   * been made before this record was written and so not carried it on. */
  const letGo = (holder: number | null) => {
    run.drop(inst, field);
    const first = mine.meta.firstSeenMs;
    if (holder !== null && holder !== inst && first >= (entry.removedMs ?? first))
      run.internal('device.seen', holder, category, deviceId, first, null);
    return INTERNAL;
  };
  // The index may know a later holder than the one this release names (the device moved on):
  // tell the installation holding it now.
  if (last <= atMs)
    return letGo(entry.inst !== null && entry.inst !== inst ? entry.inst : event.to);
  // This installation holds a newer observation than the one that took the device.
  if (entry.inst === inst) return INTERNAL;
  if ((entry.lastMs !== null && entry.lastMs > last) || (entry.removedMs ?? -1) > last)
    return letGo(entry.inst);
  run.op(
    field,
    { kind: 'claim', inst, atMs: last },
    { inst, lastMs: last, prev: entry.inst, removedMs: entry.removedMs },
  );
  if (entry.inst !== null) run.release(entry.inst, category, deviceId, last, inst);
  return INTERNAL;
}

function applySeen(run: FoldRun, event: DeviceReleasedEvent): EventOutcome {
  const { installationId: inst, category, deviceId, atMs } = event;
  const field = fieldOf(category, deviceId);
  const entry = run.indexOf(field);
  // Seen before a removal: the device started over then, its firstSeenDate with it.
  if (entry.removedMs !== null && atMs < entry.removedMs) return INTERNAL;
  const mine = run.held(inst, field);
  if (mine === undefined) {
    // Moved on since the sender looked: pass it to the holder. The index only moves forward,
    // so this ends at the installation holding the device.
    if (entry.inst !== null && entry.inst !== inst)
      run.internal('device.seen', entry.inst, category, deviceId, atMs, null);
    return INTERNAL;
  }
  if (atMs >= mine.meta.firstSeenMs) return INTERNAL;
  const record = { ...mine.record, firstSeenDate: formatDateTime(atMs) };
  run.update(inst, field, mine, record, { ...mine.meta, firstSeenMs: atMs });
  return INTERNAL;
}

/** The write that brings an expired flow up to date (time alone took a device offline). */
export function refreshFlow(
  state: InstallationState,
  ctx: Pick<FoldContext, 'nowMs' | 'onlineWindowSeconds'>,
): InstallationWrite | null {
  const flow = flowOfDevices(state.devices, ctx.nowMs, ctx.onlineWindowSeconds);
  if (sameFlow(flow, state.flow)) return null;
  return {
    id: state.id,
    expectedRevision: state.revision,
    set: new Map(),
    removed: new Set(),
    flow,
    next: { ...state, revision: state.revision + 1, flow },
  };
}
