import type { DeviceReleasedEvent } from '../projection/device-released.js';
import type { DeviceIndexEntry } from '../projection/installation-state.js';
import type { IndexOp, InstallationWrite } from '../projection/write-plan.js';
import { claimedEntry, decodeIndexEntry } from './device-index-entry.js';
import { execOrThrow } from './exec.js';
import { encodeDeviceTimes } from './installation-state-codec.js';
import {
  changeChannel,
  deviceIndexKey,
  deviceTimesKey,
  parseDeviceField,
  type ReadModelKeys,
} from './keys.js';
import { type ScriptedRedis, scriptedPipeline } from './scripts.js';

// The writes of the telemetry owner: each command on one slot. Index operations go first
// (a SET NX GET per device assumed new, claim-device-1.lua for the others), then, once the releases they imply are sent, one
// write-installation-4.lua per installation, all in one pipeline; each installation's script
// announces its change in its own slot.

export interface IndexResult {
  /** False when a newer claim or removal stood: the fold decided on an outdated entry. */
  readonly done: boolean;
  /** The installation the device was taken from, when the operation took it. */
  readonly from: number | null;
}

export async function applyIndexOps(
  conn: ScriptedRedis,
  keys: ReadModelKeys,
  ops: ReadonlyMap<string, readonly IndexOp[]>,
): Promise<Map<string, IndexResult[]>> {
  const out = new Map<string, IndexResult[]>();
  if (ops.size === 0) return out;
  const pipeline = scriptedPipeline(conn);
  for (const [field, list] of ops)
    for (const op of list)
      pipeline.claimDevice(deviceIndexKey(keys, field), op.kind, op.inst, op.atMs);
  const replies = await execOrThrow(pipeline);
  let i = 0;
  for (const [field, list] of ops) {
    out.set(
      field,
      list.map(() => {
        const [status, from] = replies[i++] as [number, string];
        return { done: status === 1, from: from === '' ? null : Number(from) };
      }),
    );
  }
  return out;
}

/**
 * Claims devices the fold assumed new without reading their index entries first: one SET NX GET
 * each, in the device's slot, one pipeline. Returns the entries that stood, by field: those
 * devices were left as they are, for the fold to decide again (a claim then goes through
 * claim-device-1.lua); every other device is claimed (adopted).
 */
export async function adoptDevices(
  conn: ScriptedRedis,
  keys: ReadModelKeys,
  claims: ReadonlyMap<string, IndexOp>,
): Promise<Map<string, DeviceIndexEntry>> {
  const found = new Map<string, DeviceIndexEntry>();
  if (claims.size === 0) return found;
  const pipeline = scriptedPipeline(conn);
  // forEach: no [field, op] array per device.
  claims.forEach((op, field) => {
    pipeline.set(deviceIndexKey(keys, field), claimedEntry(op), 'NX', 'GET');
  });
  const replies = await execOrThrow(pipeline);
  let i = 0;
  for (const field of claims.keys()) {
    const entry = decodeIndexEntry(replies[i++] as string | null);
    if (entry !== null) found.set(field, entry);
  }
  return found;
}

/**
 * The releases the index replies imply beyond those the fold decided: an operation that took the
 * device from an installation the fold did not know of (an entry written after it was read).
 */
export function releasesFromIndex(
  ops: ReadonlyMap<string, readonly IndexOp[]>,
  results: ReadonlyMap<string, readonly IndexResult[]>,
  decided: readonly DeviceReleasedEvent[],
): DeviceReleasedEvent[] {
  const known = new Set(
    decided
      .filter((r) => r.type === 'device.released')
      .map((r) => `${r.installationId}/${r.category}:${r.deviceId}`),
  );
  const more: DeviceReleasedEvent[] = [];
  for (const [field, list] of ops) {
    const device = parseDeviceField(field);
    if (!device) continue;
    list.forEach((op, i) => {
      const from = results.get(field)?.[i]?.from ?? null;
      if (from === null || from === op.inst || known.has(`${from}/${field}`)) return;
      known.add(`${from}/${field}`);
      more.push({
        type: 'device.released',
        installationId: from,
        category: device.category,
        deviceId: device.deviceId,
        atMs: op.atMs,
        to: op.kind === 'claim' ? op.inst : null,
      });
    });
  }
  return more;
}

/**
 * ARGV of write-installation-4.lua for one installation's write (pure: what the store sends);
 * `traceparent`, the sampled span writing it, goes last and into the change announcement.
 */
export function writeInstallationArgs(
  w: InstallationWrite,
  traceparent?: string,
): Array<string | number> {
  const args: Array<string | number> = [
    w.expectedRevision,
    w.flow === null ? '' : w.flow.data,
    w.flow === null ? 0 : w.flow.validUntilMs,
    w.set.size,
  ];
  // forEach: no [field, entry] array per device. The pairs first, as HSET takes them.
  w.set.forEach((entry, field) => {
    // Every record in memory is servable and canonical (its category's keys in spec order):
    // built from a creating event, or read back by readStoredDevice. Its JSON is the served one.
    args.push(field, JSON.stringify(entry.record));
  });
  // Then their precise times, which the next load reads back (the record's are whole seconds).
  w.set.forEach((entry) => {
    args.push(encodeDeviceTimes(entry.meta));
  });
  args.push(...w.removed);
  if (traceparent !== undefined) args.push(traceparent);
  return args;
}

/**
 * Per installation: the new revision, or null when its revision or a newer record refused it.
 * With `dueKey` (the partition's flow schedule, its own slot) the same pipeline records when
 * each written flow stops being valid: scheduling a flow whose write is then refused costs the
 * sweep one needless look; unscheduling one is put right at once (due now: the sweep looks).
 */
export async function writeInstallations(
  conn: ScriptedRedis,
  keys: ReadModelKeys,
  writes: readonly InstallationWrite[],
  dueKey?: string,
  /** The sampled span writing them, announced with each change (change-feed.ts). */
  traceparent?: string,
): Promise<Map<number, number | null>> {
  const out = new Map<number, number | null>();
  if (writes.length === 0) return out;
  const pipeline = scriptedPipeline(conn);
  for (const w of writes)
    pipeline.writeInstallation(
      keys.devices(w.id),
      deviceTimesKey(keys, w.id),
      keys.flow(w.id),
      changeChannel(keys, w.id),
      writeInstallationArgs(w, traceparent),
    );
  const never = dueKey === undefined ? [] : schedule(pipeline, dueKey, writes);
  const replies = await execOrThrow(pipeline);
  writes.forEach((w, i) => {
    const [status, value] = replies[i] as [number, number | string];
    out.set(w.id, status === 1 ? Number(value) : null);
  });
  const refusedNever = never.filter((id) => out.get(Number(id)) === null);
  if (dueKey !== undefined && refusedNever.length > 0)
    await conn.zadd(dueKey, ...refusedNever.flatMap((id) => [1, id]));
  return out;
}

/** Queues the schedule of the written flows; returns the installations it unschedules. */
function schedule(
  pipeline: ReturnType<typeof scriptedPipeline>,
  key: string,
  writes: readonly InstallationWrite[],
): string[] {
  const due: Array<number | string> = [];
  const never: string[] = [];
  for (const w of writes) {
    if (w.flow === null) continue;
    if (w.flow.validUntilMs > 0) due.push(w.flow.validUntilMs, String(w.id));
    else never.push(String(w.id));
  }
  if (due.length > 0) pipeline.zadd(key, ...due);
  if (never.length > 0) pipeline.zrem(key, ...never);
  return never;
}
