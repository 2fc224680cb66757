import type {
  CarriedDevice,
  DeviceIndexEntry,
  InstallationState,
} from '../projection/installation-state.js';
import { decodeIndexEntry } from './device-index-entry.js';
import { execOrThrow } from './exec.js';
import { CorruptStoredDataError, decodeInstallationState } from './installation-state-codec.js';
import {
  deletionMarkerKey,
  deviceIndexKey,
  deviceTimesKey,
  parseDeviceField,
  type ReadModelKeys,
} from './keys.js';
import { type ScriptedRedis, scriptedPipeline } from './scripts.js';

// The read edge of the telemetry owner: one pipeline per batch reads every installation it
// meets for the first time (one script each, in its slot) and the index entries of the devices
// the fold must locate (one GET each, in the device's slot). Nothing is read in the fold.

export interface Loaded {
  readonly states: Map<number, InstallationState>;
  /** Installations whose stored devices cannot be read back, with the dead-letter detail. */
  readonly corrupt: Map<number, string>;
  readonly index: Map<string, DeviceIndexEntry>;
  /** The records asked for in other installations (a move), by device field. */
  readonly carried: Map<string, CarriedDevice>;
}

/**
 * One pipeline: the installations (one script each, in its slot), the index entries (a GET each,
 * in the device's slot) and, for devices that live in another installation than the event that
 * met them (a move), their record and precise times in that installation's slot.
 */
export async function loadForBatch(
  conn: ScriptedRedis,
  keys: ReadModelKeys,
  installations: readonly number[],
  indexFields: readonly string[],
  carried: ReadonlyMap<string, number> = new Map(),
): Promise<Loaded> {
  const out: Loaded = {
    states: new Map(),
    corrupt: new Map(),
    index: new Map(),
    carried: new Map(),
  };
  if (installations.length === 0 && indexFields.length === 0 && carried.size === 0) return out;
  const pipeline = scriptedPipeline(conn);
  for (const id of installations)
    pipeline.loadInstallation(
      keys.devices(id),
      deviceTimesKey(keys, id),
      deletionMarkerKey(keys, id),
      keys.flow(id),
    );
  for (const field of indexFields) pipeline.get(deviceIndexKey(keys, field));
  for (const [field, inst] of carried) {
    pipeline.hget(keys.devices(inst), field);
    pipeline.hget(deviceTimesKey(keys, inst), field);
  }
  const replies = await execOrThrow(pipeline);
  installations.forEach((id, i) => {
    const [marker, times, devices, flow] = replies[i] as [
      string | null,
      string[],
      string[],
      Array<string | null>,
    ];
    try {
      out.states.set(id, decodeInstallationState(id, marker, times, devices, flow));
    } catch (error) {
      if (!(error instanceof CorruptStoredDataError)) throw error;
      out.corrupt.set(id, error.message);
    }
  });
  indexFields.forEach((field, j) => {
    const entry = decodeIndexEntry(replies[installations.length + j] as string | null);
    if (entry !== null) out.index.set(field, entry);
  });
  let i = installations.length + indexFields.length;
  for (const [field, inst] of carried) {
    const device = carriedDevice(inst, field, replies[i] as string | null, replies[i + 1]);
    i += 2;
    if (device) out.carried.set(field, device);
  }
  return out;
}

/** A device's record as another installation holds it; none when absent or unreadable. */
function carriedDevice(
  inst: number,
  field: string,
  json: string | null,
  times: unknown,
): CarriedDevice | undefined {
  if (json === null || !parseDeviceField(field)) return undefined;
  try {
    const entry = decodeInstallationState(
      inst,
      null,
      typeof times === 'string' ? [field, times] : [],
      [field, json],
      [],
    ).devices.get(field);
    return entry && { record: entry.record, meta: entry.meta };
  } catch (error) {
    // An unreadable record elsewhere is that installation's problem: start afresh here.
    if (!(error instanceof CorruptStoredDataError)) throw error;
    return undefined;
  }
}
