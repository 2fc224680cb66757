import type { Redis } from 'ioredis';
import type { DeviceRecord } from '../domain/device-record.js';
import type { EnergyFlow } from '../domain/energy-flow.js';
import { execOrThrow } from './exec.js';
import { toMap, writeFlow } from './flow-store.js';
import { deletionMarkerKey, type ReadModelKeys } from './keys.js';
import { optimistic } from './optimistic.js';
import { flowFromStoredDevices } from './stored-flow.js';

// Devices hashes and the device index (internal `dev:<category>:<deviceId>` -> inst, first,
// last, removed). One telemetry batch is one optimistic transaction over the index entries of
// its devices and the devices hashes of every installation involved, so a device moving between
// installations handled by different consumers never ends up in both or neither.

/** Precise bookkeeping of one device (the record's date-times are whole seconds). */
export interface DeviceIndexEntry {
  readonly inst: number | null;
  readonly first: number | null;
  readonly last: number | null;
  /** occurredAt of the latest applied removal: older observations must not resurrect it. */
  readonly removed: number | null;
}

export interface TelemetryView {
  /** By device field `<category>:<deviceId>`; absent = never seen. */
  readonly index: Map<string, DeviceIndexEntry>;
  /** installationId -> devices hash (field -> record JSON). */
  readonly devices: Map<number, Map<string, string>>;
  /** installationId -> when it was deleted (epoch ms), for deleted installations only. */
  readonly deletedAt: ReadonlyMap<number, number>;
}

export interface TelemetryWrites {
  readonly deviceWrites: ReadonlyMap<number, ReadonlyMap<string, string | null>>;
  readonly indexWrites: ReadonlyMap<string, DeviceIndexEntry>;
  readonly dirty: ReadonlySet<number>;
  /** Records the plan already holds as objects, by their JSON: the flow reuses them. */
  readonly records: ReadonlyMap<string, DeviceRecord>;
}

/**
 * A stored device record of these installations could not be read back, so their flows cannot be
 * computed: nothing was written. Not retriable; the caller drops the events that touched them.
 */
export class CorruptStoredDataError extends Error {
  readonly retriable = false;
  constructor(readonly installations: ReadonlyMap<number, string>) {
    super(`stored devices unreadable in installation(s) ${[...installations.keys()].join(', ')}`);
  }
}

export interface DeviceStore {
  /**
   * Loads the view of `fields` (device fields) and `installations`, lets `plan` decide, writes
   * the decided changes and the recomputed flows of dirty installations in one MULTI; replans
   * when another writer touched the same keys meanwhile.
   */
  transact<T extends TelemetryWrites>(
    fields: readonly string[],
    installations: readonly number[],
    plan: (view: TelemetryView) => T,
    nowMs: () => number,
  ): Promise<T>;
}

export const deviceIndexKey = (keys: ReadModelKeys, field: string): string =>
  keys.internal('dev', field);

const num = (v: string | undefined): number | null =>
  v === undefined || v === '' ? null : Number(v);

export function createDeviceStore(deps: {
  conn: Redis;
  keys: ReadModelKeys;
  onlineWindowSeconds: number;
}): DeviceStore {
  const { conn, keys } = deps;
  const gone = (id: number) => deletionMarkerKey(keys, id);
  return {
    transact(fields, installations, plan, nowMs) {
      return optimistic(conn, async (watcher) => {
        const indexKeys = fields.map((f) => deviceIndexKey(keys, f));
        await watcher.watch(indexKeys);
        const entries = await hgetallMany(conn, indexKeys);
        const index = new Map<string, DeviceIndexEntry>();
        const insts = new Set(installations);
        entries.forEach((hash, i) => {
          if (Object.keys(hash).length === 0) return;
          const entry = {
            inst: num(hash.inst),
            first: num(hash.first),
            last: num(hash.last),
            removed: num(hash.removed),
          };
          index.set(fields[i] as string, entry);
          if (entry.inst !== null) insts.add(entry.inst);
        });
        const instList = [...insts];
        // The deletion marker shares the devices hash's slot: a deletion racing this batch
        // aborts the EXEC and the replan sees it.
        await watcher.watch(instList.flatMap((id) => [keys.devices(id), gone(id)]));
        const [hashes, markers] = await Promise.all([
          hgetallMany(
            conn,
            instList.map((id) => keys.devices(id)),
          ),
          getMany(conn, instList.map(gone)),
        ]);
        const devices = new Map(instList.map((id, i) => [id, toMap(hashes[i] ?? {})]));
        const deletedAt = new Map<number, number>();
        markers.forEach((m, i) => {
          if (m !== null) deletedAt.set(instList[i] as number, Number(m));
        });
        const result = plan({ index, devices, deletedAt });
        const now = nowMs();
        const flows = new Map<number, EnergyFlow>();
        const corrupt = new Map<number, string>();
        for (const id of result.dirty) {
          try {
            const hash = devices.get(id) ?? new Map();
            flows.set(
              id,
              flowFromStoredDevices(hash, now, deps.onlineWindowSeconds, result.records),
            );
          } catch (error) {
            corrupt.set(id, (error as Error).message);
          }
        }
        if (corrupt.size > 0) throw new CorruptStoredDataError(corrupt);
        return {
          result,
          write: (multi) => {
            for (const [id, writes] of result.deviceWrites) {
              for (const [field, json] of writes) {
                if (json === null) multi.hdel(keys.devices(id), field);
                else multi.hset(keys.devices(id), field, json);
              }
            }
            for (const [field, e] of result.indexWrites) {
              const s = (v: number | null) => (v === null ? '' : String(v));
              multi.hset(deviceIndexKey(keys, field), {
                inst: s(e.inst),
                first: s(e.first),
                last: s(e.last),
                removed: s(e.removed),
              });
            }
            for (const [id, flow] of flows) writeFlow(multi, keys, id, flow);
          },
        };
      });
    },
  };
}

async function hgetallMany(
  conn: Redis,
  keys: readonly string[],
): Promise<Record<string, string>[]> {
  if (keys.length === 0) return [];
  const pipeline = conn.pipeline();
  for (const key of keys) pipeline.hgetall(key);
  return (await execOrThrow(pipeline)) as Record<string, string>[];
}

/** One GET per key in a pipeline (not MGET: the keys span hash slots). */
async function getMany(conn: Redis, keys: readonly string[]): Promise<Array<string | null>> {
  if (keys.length === 0) return [];
  const pipeline = conn.pipeline();
  for (const key of keys) pipeline.get(key);
  return (await execOrThrow(pipeline)) as Array<string | null>;
}
