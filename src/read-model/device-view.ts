import type { DeviceIndexEntry, TelemetryView } from './device-store.js';
import { execOrThrow } from './exec.js';
import { deletionMarkerKey, deviceIndexKey, flowInputsKey, type ReadModelKeys } from './keys.js';
import { type ScriptedPipeline, type ScriptedRedis, scriptedPipeline } from './scripts.js';

// Loads what one telemetry batch needs, under WATCH, in as few round trips as the batch allows:
// one pipeline WATCHes and reads the devices' index entries and, in the installations the events
// name, those devices' records, the deletion marker and the stored flow inputs. A second one is
// needed only when an index entry names an installation (or a device) the first did not read:
// a device that moved. Only the devices the batch touches are read, never whole devices hashes.

const INDEX_FIELDS = ['inst', 'first', 'last', 'removed'] as const;

/** What one installation's stored flow inputs say, read beside its devices. */
export interface InstallationRead {
  /** The flow-inputs hash as stored, flat: `[field, value, …]`. */
  readonly inputs: readonly string[];
  /** HLEN of the devices hash, to tell whether the inputs cover it. */
  readonly devicesCount: number;
}

export interface LoadedView {
  readonly view: TelemetryView;
  readonly reads: ReadonlyMap<number, InstallationRead>;
}

const num = (v: string | null | undefined): number | null =>
  v === null || v === undefined || v === '' ? null : Number(v);

/**
 * `origins`: per field, the installations its events name; without it every field is looked for
 * in every listed installation. The connection is left WATCHing every key read.
 */
export async function loadTelemetryView(
  conn: ScriptedRedis,
  keys: ReadModelKeys,
  fields: readonly string[],
  installations: readonly number[],
  origins?: ReadonlyMap<string, Iterable<number>>,
): Promise<LoadedView> {
  const index = new Map<string, DeviceIndexEntry>();
  const devices = new Map<number, Map<string, string>>();
  const deletedAt = new Map<number, number>();
  const reads = new Map<number, InstallationRead>();
  /** installationId -> the device fields read from it so far. */
  const asked = new Map<number, Set<string>>();

  const first = new Map<number, Set<string>>(installations.map((id) => [id, new Set<string>()]));
  for (const field of fields) {
    for (const id of origins?.get(field) ?? installations) first.get(id)?.add(field);
  }
  const pipeline = scriptedPipeline(conn);
  const indexKeys = fields.map((f) => deviceIndexKey(keys, f));
  // The deletion marker shares the devices hash's slot: a deletion racing this batch aborts
  // the EXEC and the replan sees it; so does a sweeper rewriting the flow inputs.
  const watched = [...indexKeys, ...watchKeysOf(keys, installations)];
  if (watched.length > 0) pipeline.watch(...watched);
  for (const key of indexKeys) pipeline.hmget(key, ...INDEX_FIELDS);
  const parseFirst = queueInstallations(pipeline, keys, first);
  const replies = await execOrThrow(pipeline);
  let at = watched.length > 0 ? 1 : 0;
  for (const field of fields) {
    const [inst, firstMs, last, removed] = replies[at++] as Array<string | null>;
    if (inst === null && firstMs === null && last === null && removed === null) continue;
    index.set(field, {
      inst: num(inst),
      first: num(firstMs),
      last: num(last),
      removed: num(removed),
    });
  }
  parseFirst(replies.slice(at), devices, deletedAt, reads, asked);

  // Devices whose index names an installation, or sits in one, that was not read yet.
  const second = new Map<number, Set<string>>();
  for (const [field, entry] of index) {
    if (entry.inst === null || asked.get(entry.inst)?.has(field)) continue;
    const set = second.get(entry.inst) ?? new Set<string>();
    second.set(entry.inst, set.add(field));
  }
  if (second.size > 0) {
    const more = scriptedPipeline(conn);
    const fresh = [...second.keys()].filter((id) => !reads.has(id));
    if (fresh.length > 0) more.watch(...watchKeysOf(keys, fresh));
    const parseSecond = queueInstallations(more, keys, second, reads);
    const replies2 = await execOrThrow(more);
    parseSecond(replies2.slice(fresh.length > 0 ? 1 : 0), devices, deletedAt, reads, asked);
  }
  return { view: { index, devices, deletedAt }, reads };
}

const watchKeysOf = (keys: ReadModelKeys, ids: readonly number[]): string[] =>
  ids.flatMap((id) => [keys.devices(id), deletionMarkerKey(keys, id), flowInputsKey(keys, id)]);

type Parse = (
  replies: readonly unknown[],
  devices: Map<number, Map<string, string>>,
  deletedAt: Map<number, number>,
  reads: Map<number, InstallationRead>,
  asked: Map<number, Set<string>>,
) => void;

/**
 * Queues, per installation, either the whole read (read-installation-3.lua: marker, devices
 * count, flow inputs and the wanted records, one call) or, for one already read, HMGET of the
 * further device fields; returns the parser of their replies.
 */
function queueInstallations(
  pipeline: ScriptedPipeline,
  keys: ReadModelKeys,
  wanted: ReadonlyMap<number, ReadonlySet<string>>,
  already?: ReadonlyMap<number, InstallationRead>,
): Parse {
  const plan: Array<{ id: number; fields: string[]; whole: boolean }> = [];
  for (const [id, set] of wanted) {
    const fields = [...set];
    const whole = !already?.has(id);
    if (whole) {
      pipeline.readInstallation(
        keys.devices(id),
        deletionMarkerKey(keys, id),
        flowInputsKey(keys, id),
        ...fields,
      );
    } else if (fields.length > 0) {
      pipeline.hmget(keys.devices(id), ...fields);
    } else {
      continue;
    }
    plan.push({ id, fields, whole });
  }
  return (replies, devices, deletedAt, reads, asked) => {
    plan.forEach(({ id, fields, whole }, r) => {
      const hash = devices.get(id) ?? new Map<string, string>();
      devices.set(id, hash);
      const seen = asked.get(id) ?? new Set<string>();
      asked.set(id, seen);
      let values: Array<string | null>;
      if (whole) {
        const [marker, devicesCount, flat, records] = replies[r] as [
          string | null,
          number,
          string[],
          Array<string | null>,
        ];
        if (marker !== null) deletedAt.set(id, Number(marker));
        reads.set(id, { inputs: flat, devicesCount });
        values = records;
      } else {
        values = replies[r] as Array<string | null>;
      }
      fields.forEach((field, j) => {
        seen.add(field);
        const v = values[j];
        if (v !== null && v !== undefined) hash.set(field, v);
      });
    });
  };
}
