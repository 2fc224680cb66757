import type { ChainableCommander, Redis } from 'ioredis';
import { type EnergyFlow, serializeEnergyFlow } from '../domain/energy-flow.js';
import type { ReadModelKeys } from './keys.js';
import { ContentionError, optimistic } from './optimistic.js';
import { withScripts } from './scripts.js';
import { flowFromStoredDevices } from './stored-flow.js';

// The stored energy flow of each installation, and the schedule of flows that time alone will
// invalidate (sorted set: member installationId, score validUntil).

export type DevicesHash = ReadonlyMap<string, string>;

export const flowScheduleKey = (keys: ReadModelKeys): string => keys.internal('flow-due');

export function writeFlow(
  multi: ChainableCommander,
  keys: ReadModelKeys,
  installationId: number,
  flow: EnergyFlow,
): void {
  multi.hset(keys.flow(installationId), {
    data: serializeEnergyFlow(flow.data),
    validUntil: String(flow.validUntilMs),
  });
  if (flow.validUntilMs > 0) {
    multi.zadd(flowScheduleKey(keys), flow.validUntilMs, String(installationId));
  } else {
    multi.zrem(flowScheduleKey(keys), String(installationId));
  }
}

export function forgetFlow(multi: ChainableCommander, keys: ReadModelKeys, id: number): void {
  multi.del(keys.flow(id));
  multi.zrem(flowScheduleKey(keys), String(id));
}

export function toMap(hash: Record<string, string>): Map<string, string> {
  return new Map(Object.entries(hash));
}

export interface FlowStore {
  /**
   * Claims up to `limit` installations whose flow validity ended before `nowMs`, oldest first,
   * by moving them to `leaseEndMs` on the schedule: concurrent sweepers claim disjoint sets.
   */
  claimDue(nowMs: number, leaseEndMs: number, limit: number): Promise<number[]>;
  /**
   * Recomputes one flow under WATCH of its devices and flow: a batch that changed either
   * meanwhile wins and this computation is dropped. Returns false when it was dropped.
   */
  refresh(installationId: number, nowMs: number): Promise<boolean>;
  /** Puts a scheduled installation back at `atMs` (when its recomputation failed). */
  postpone(installationId: number, atMs: number): Promise<void>;
}

export function createFlowStore(deps: {
  conn: Redis;
  keys: ReadModelKeys;
  onlineWindowSeconds: number;
}): FlowStore {
  const conn = withScripts(deps.conn);
  const { keys } = deps;
  return {
    async claimDue(nowMs, leaseEndMs, limit) {
      return (await conn.claimDueFlows(flowScheduleKey(keys), nowMs, leaseEndMs, limit)).map(
        Number,
      );
    },
    async postpone(id, atMs) {
      await conn.zadd(flowScheduleKey(keys), 'XX', atMs, String(id));
    },
    async refresh(id, nowMs) {
      try {
        return await optimistic(conn, async (watcher) => {
          await watcher.watch([keys.devices(id), keys.flow(id)]);
          const [hash, stored] = await Promise.all([
            conn.hgetall(keys.devices(id)),
            conn.exists(keys.flow(id)),
          ]);
          // No stored flow: the installation was deleted meanwhile; do not bring the key back.
          if (stored === 0) return { result: false, write: (multi) => forgetFlow(multi, keys, id) };
          const flow = flowFromStoredDevices(toMap(hash), nowMs, deps.onlineWindowSeconds);
          return { result: true, write: (multi) => writeFlow(multi, keys, id, flow) };
        });
      } catch (error) {
        if (error instanceof ContentionError) return false;
        throw error;
      }
    },
  };
}
