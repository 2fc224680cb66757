import type { Redis } from 'ioredis';
import type { DeviceRecord } from '../domain/device-record.js';
import { flowsOfBatch } from './batch-flows.js';
import { loadTelemetryView } from './device-view.js';
import { writeFlows } from './flow-store.js';
import { deviceIndexKey, flowInputsKey, type ReadModelKeys } from './keys.js';
import { optimistic } from './optimistic.js';
import { withScripts } from './scripts.js';

// Devices hashes, their flow inputs (flow-inputs.ts) and the device index (internal
// `dev:<category>:<deviceId>` -> inst, first, last, removed). One telemetry batch is one
// optimistic transaction over the index entries of its devices and the devices hashes of every
// installation involved, so a device moving between installations handled by different
// consumers never ends up in both or neither. What it reads: device-view.ts; the flows it
// writes: batch-flows.ts.

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
  /** installationId -> the batch's devices found in its devices hash (field -> record JSON). */
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

export interface DeviceStore {
  /**
   * Loads the view of `fields` (device fields) and `installations`, lets `plan` decide, writes
   * the decided changes and the recomputed flows of dirty installations in one MULTI; replans
   * when another writer touched the same keys meanwhile. `origins`: per field, the installations
   * its events name (where a device without an index entry is looked for); without it every
   * field is looked for in every listed installation.
   */
  transact<T extends TelemetryWrites>(
    fields: readonly string[],
    installations: readonly number[],
    plan: (view: TelemetryView) => T,
    nowMs: () => number,
    origins?: ReadonlyMap<string, Iterable<number>>,
  ): Promise<T>;
}

export function createDeviceStore(deps: {
  conn: Redis;
  keys: ReadModelKeys;
  onlineWindowSeconds: number;
}): DeviceStore {
  const conn = withScripts(deps.conn);
  const { keys } = deps;
  return {
    transact(fields, installations, plan, nowMs, origins) {
      return optimistic(conn, async () => {
        const { view, reads } = await loadTelemetryView(conn, keys, fields, installations, origins);
        const result = plan(view);
        const computed = await flowsOfBatch(
          conn,
          keys,
          result,
          reads,
          nowMs(),
          deps.onlineWindowSeconds,
        );
        return {
          result,
          write: (multi) => {
            for (const [id, writes] of result.deviceWrites) {
              const set: string[] = [];
              const del: string[] = [];
              for (const [field, json] of writes) {
                if (json === null) del.push(field);
                else set.push(field, json);
              }
              if (set.length > 0) multi.hset(keys.devices(id), ...set);
              if (del.length > 0) multi.hdel(keys.devices(id), ...del);
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
            for (const [id, c] of computed) {
              const key = flowInputsKey(keys, id);
              if (c.rewrite) multi.del(key);
              const set: string[] = [];
              const del: string[] = [];
              for (const [field, value] of c.inputWrites) {
                if (value === null) del.push(field);
                else set.push(field, value);
              }
              if (set.length > 0) multi.hset(key, ...set);
              if (del.length > 0 && !c.rewrite) multi.hdel(key, ...del);
            }
            writeFlows(
              multi,
              keys,
              [...computed].map(([id, c]) => [id, c.flow] as const),
            );
          },
        };
      });
    },
  };
}
