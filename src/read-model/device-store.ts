import type { Redis } from 'ioredis';
import type { EnergyFlow } from '../domain/energy-flow.js';
import { flowOf, toMap, writeFlow } from './flow-store.js';
import type { ReadModelKeys } from './keys.js';
import { optimistic } from './optimistic.js';

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
}

export interface TelemetryWrites {
  readonly deviceWrites: ReadonlyMap<number, ReadonlyMap<string, string | null>>;
  readonly indexWrites: ReadonlyMap<string, DeviceIndexEntry>;
  readonly dirty: ReadonlySet<number>;
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
        await watcher.watch(instList.map((id) => keys.devices(id)));
        const hashes = await hgetallMany(
          conn,
          instList.map((id) => keys.devices(id)),
        );
        const devices = new Map(instList.map((id, i) => [id, toMap(hashes[i] ?? {})]));
        const result = plan({ index, devices });
        const now = nowMs();
        const flows = new Map<number, EnergyFlow>();
        for (const id of result.dirty) {
          flows.set(id, flowOf(devices.get(id) ?? new Map(), now, deps.onlineWindowSeconds));
        }
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
  const replies = (await pipeline.exec()) ?? [];
  return replies.map(([error, value]) => {
    if (error) throw error;
    return value as Record<string, string>;
  });
}
