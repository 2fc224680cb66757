import type { ChainableCommander, Redis } from 'ioredis';
import {
  computeFlowFromInputs,
  type EnergyFlow,
  serializeEnergyFlow,
} from '../domain/energy-flow.js';
import { execOrThrow } from './exec.js';
import { decodeFlowInputs, encodeFlowInput, flowInputsOfRecords } from './flow-inputs.js';
import { deletionMarkerKey, flowInputsKey, type ReadModelKeys } from './keys.js';
import { ContentionError, optimistic } from './optimistic.js';
import { scriptedPipeline, withScripts } from './scripts.js';

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

/** writeFlow for many installations, with one schedule update for all of them. */
export function writeFlows(
  multi: ChainableCommander,
  keys: ReadModelKeys,
  flows: Iterable<readonly [number, EnergyFlow]>,
): void {
  const due: Array<number | string> = [];
  const never: string[] = [];
  for (const [id, flow] of flows) {
    multi.hset(keys.flow(id), {
      data: serializeEnergyFlow(flow.data),
      validUntil: String(flow.validUntilMs),
    });
    if (flow.validUntilMs > 0) due.push(flow.validUntilMs, String(id));
    else never.push(String(id));
  }
  if (due.length > 0) multi.zadd(flowScheduleKey(keys), ...due);
  if (never.length > 0) multi.zrem(flowScheduleKey(keys), ...never);
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
      const inputsKey = flowInputsKey(keys, id);
      try {
        return await optimistic(conn, async (watcher) => {
          // The flow inputs change only with the devices hash (same MULTI, same deletion).
          await watcher.watch([keys.devices(id), keys.flow(id)]);
          const [[, devicesCount, stored], exists] = (await execOrThrow(
            scriptedPipeline(conn)
              .readInstallation(keys.devices(id), deletionMarkerKey(keys, id), inputsKey)
              .exists(keys.flow(id)),
          )) as [[unknown, number, string[]], number];
          // No stored flow: the installation was deleted meanwhile; do not bring the key back.
          if (exists === 0) return { result: false, write: (multi) => forgetFlow(multi, keys, id) };
          let inputs = decodeFlowInputs(stored, devicesCount);
          const rewrite = inputs === null;
          // Written before the flow inputs existed: compute from the records, store the inputs.
          if (inputs === null)
            inputs = flowInputsOfRecords(toMap(await conn.hgetall(keys.devices(id))));
          const flow = computeFlowFromInputs(inputs.values(), nowMs, deps.onlineWindowSeconds);
          const all = inputs;
          return {
            result: true,
            write: (multi) => {
              if (rewrite) {
                multi.del(inputsKey);
                const pairs = [...all].flatMap(([f, input]) => [f, encodeFlowInput(input)]);
                if (pairs.length > 0) multi.hset(inputsKey, ...pairs);
              }
              writeFlow(multi, keys, id, flow);
            },
          };
        });
      } catch (error) {
        if (error instanceof ContentionError) return false;
        throw error;
      }
    },
  };
}
