import type { ReadModelKeys } from '../../src/read-model/keys.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import { flowScriptKeys } from '../reader/api-scripts.js';
import { packed } from '../reader/packed.js';
import { slotRouter } from '../reader/slot-router.js';
import { type FillPart, type Snapshot, snapshotOf } from './snapshot.js';

// The one read that fills an entry, in the installation's slot: for a flow, what the flow
// script reads (the devices only past validUntil); else everything. The script judges the
// application's acl entry: null answers "missing" and "not yours" alike.

export type Fill = (
  app: number,
  id: number,
  nowMs: number,
  /** Copied out of the reply's socket chunk (packed.ts): the snapshot is to be kept. */
  kept: boolean,
  part: FillPart,
) => Promise<Snapshot | null>;

export function createFill(deps: { redis: RedisClient; keys: ReadModelKeys }): Fill {
  const sendTo = slotRouter(deps.redis);
  return async (app, id, nowMs, kept, part) => {
    const read = flowScriptKeys(deps.keys, id);
    const reply = await sendTo(read[0], (redis) =>
      part === 'flow'
        ? redis.apiReadFlowBuffer(...read, app, nowMs)
        : redis.apiReadSnapshotBuffer(...read, app, nowMs),
    );
    if (reply === null) return null;
    // The snapshot script answers the acl entry first; the flow script does not.
    const [data, validUntil, ...stored] = (part === 'flow' ? reply : reply.slice(1)) as Buffer[];
    const validUntilMs = Number(String(validUntil));
    const withDevices = part === 'all' || (validUntilMs !== 0 && validUntilMs < nowMs);
    const devices = !withDevices ? null : kept ? packed(stored) : stored;
    return snapshotOf(app, String(data), validUntilMs, devices);
  };
}
