import {
  ABSENT,
  type Access,
  type Memo,
  type StoredDevices,
  type StoredFlow,
} from '../reader/api-reader.js';

// What the near-cache holds of one installation, and the reads it answers from it. A hit hands
// out objects built with the snapshot, so it allocates nothing.

export interface Snapshot {
  /** The applications allowed to read it: only those whose keys read it through here. */
  readonly grants: Set<number>;
  readonly flowData: string;
  readonly validUntilMs: number;
  /**
   * The devices hash, flat field/value pairs of stored bytes; null when it was read for a flow
   * that was valid then (the flow script's reply, a few hundred bytes where the devices are
   * kilobytes): a devices read, or the flow once past validUntil, is then a miss.
   */
  readonly devices: readonly Buffer[] | null;
  /** Answers built from these bytes, kept as long as the snapshot is. */
  readonly memo: Memo;
  /** The flow read as served until validUntil, built once: a hit allocates nothing for it. */
  readonly fresh: { readonly kind: 'ok'; readonly value: StoredFlow };
  /** The devices read, likewise (null without the devices). */
  readonly devicesRead: { readonly kind: 'ok'; readonly value: StoredDevices } | null;
}

/** What a fill reads: the flow (and the devices only past validUntil), or all. */
export type FillPart = 'flow' | 'all';

/** What a stream follows: the flow at any later time, until the key's expiry. */
export interface FollowedFlow {
  /** The key's expiry (epoch ms, null = never). */
  readonly keyExpiresAtMs: number | null;
  /** The flow as the flow script would answer it at `nowMs`. */
  flowAt(nowMs: number): StoredFlow;
}

/** The snapshot of a read made for `app`. */
export function snapshotOf(
  app: number,
  flowData: string,
  validUntilMs: number,
  devices: readonly Buffer[] | null,
): Snapshot {
  const memo: Memo = { flow: null, flowPart: null, devices: null };
  return {
    grants: new Set([app]),
    flowData,
    validUntilMs,
    devices,
    memo,
    fresh: { kind: 'ok', value: { data: flowData, validUntilMs, devices: null, memo } },
    devicesRead: devices && { kind: 'ok', value: { pairs: devices, memo } },
  };
}

/** Whether the snapshot answers a read of `part` at `nowMs` (see Snapshot.devices). */
export function holds(snapshot: Snapshot, part: FillPart, nowMs: number): boolean {
  if (snapshot.devices !== null) return true;
  const { validUntilMs } = snapshot;
  return part === 'flow' && (validUntilMs === 0 || validUntilMs >= nowMs);
}

/** The flow read of a snapshot: the one built with it while validUntil holds. */
export function flowReadOf(snapshot: Snapshot, nowMs: number): Access<StoredFlow> {
  const value = storedFlowOf(snapshot, nowMs);
  return value === snapshot.fresh.value ? snapshot.fresh : { kind: 'ok', value };
}

/** The devices read of a snapshot read for them (a fill of 'all' always holds its devices). */
export function devicesReadOf(snapshot: Snapshot): Access<StoredDevices> {
  return snapshot.devicesRead ?? ABSENT;
}

/** The snapshot as a stream follows it, with the key's expiry: one object, no closure. */
export class Followed implements FollowedFlow {
  constructor(
    readonly keyExpiresAtMs: number | null,
    private readonly snapshot: Snapshot,
  ) {}
  flowAt(nowMs: number): StoredFlow {
    return storedFlowOf(this.snapshot, nowMs);
  }
}

/**
 * The flow as the flow script answers it: with the devices only once validUntil has passed.
 * Such a flow is recomputed for its instant, so nothing built from it is kept (memo null).
 */
function storedFlowOf(snapshot: Snapshot, nowMs: number): StoredFlow {
  const { validUntilMs } = snapshot;
  if (validUntilMs === 0 || validUntilMs >= nowMs) return snapshot.fresh.value;
  return {
    data: snapshot.flowData,
    validUntilMs,
    // Cold path (until the consumers' sweep rewrites the flow): decode as the script path does.
    // A snapshot without its devices is never served past validUntil (hit), nor to streams.
    devices: (snapshot.devices ?? []).map(String),
    memo: null,
  };
}
