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
  flowInputsKey,
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
}

export async function loadForBatch(
  conn: ScriptedRedis,
  keys: ReadModelKeys,
  installations: readonly number[],
  indexFields: readonly string[],
): Promise<Loaded> {
  const out: Loaded = { states: new Map(), corrupt: new Map(), index: new Map() };
  if (installations.length === 0 && indexFields.length === 0) return out;
  const pipeline = scriptedPipeline(conn);
  for (const id of installations)
    pipeline.loadInstallation(
      keys.devices(id),
      flowInputsKey(keys, id),
      deletionMarkerKey(keys, id),
      keys.flow(id),
    );
  for (const field of indexFields) pipeline.get(deviceIndexKey(keys, field));
  const replies = await execOrThrow(pipeline);
  installations.forEach((id, i) => {
    const [marker, inputs, devices, flow] = replies[i] as [
      string | null,
      string[],
      string[],
      Array<string | null>,
    ];
    try {
      out.states.set(id, decodeInstallationState(id, marker, inputs, devices, flow));
    } catch (error) {
      if (!(error instanceof CorruptStoredDataError)) throw error;
      out.corrupt.set(id, error.message);
    }
  });
  indexFields.forEach((field, j) => {
    const entry = decodeIndexEntry(replies[installations.length + j] as string | null);
    if (entry !== null) out.index.set(field, entry);
  });
  return out;
}

/**
 * The records of devices that live in another installation than the event that met them (a
 * move), with their precise times: the new installation carries the record on. A second round
 * trip, needed only by moves; each read is in the old installation's slot.
 */
export async function loadCarried(
  conn: ScriptedRedis,
  keys: ReadModelKeys,
  wanted: ReadonlyMap<string, number>,
): Promise<Map<string, CarriedDevice>> {
  const out = new Map<string, CarriedDevice>();
  if (wanted.size === 0) return out;
  const pipeline = scriptedPipeline(conn);
  for (const [field, inst] of wanted) {
    pipeline.hget(keys.devices(inst), field);
    pipeline.hget(flowInputsKey(keys, inst), field);
  }
  const replies = await execOrThrow(pipeline);
  let i = 0;
  for (const [field, inst] of wanted) {
    const json = replies[i++] as string | null;
    const inputs = replies[i++] as string | null;
    const device = parseDeviceField(field);
    if (json === null || !device) continue;
    try {
      const entry = decodeInstallationState(
        inst,
        null,
        inputs === null ? [] : [field, inputs],
        [field, json],
        [],
      ).devices.get(field);
      if (entry) out.set(field, { record: entry.record, meta: entry.meta });
    } catch (error) {
      // An unreadable record elsewhere is that installation's problem: start afresh here.
      if (!(error instanceof CorruptStoredDataError)) throw error;
    }
  }
  return out;
}
