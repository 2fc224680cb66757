import { randomUUID } from 'node:crypto';
import { epochKey, type ReadModelKeys } from './keys.js';
import type { RedisClient } from './redis-connection.js';

// The read model's epoch marker: a key written once when the model is built from the start of
// the topics (a new consumer group, or the rebuild command). Consumers and the API check it;
// a missing marker under a group that already committed offsets means Redis lost its data, and
// projecting on would file valid events as `missing_required_fields` (docs/reliability.md).
// One key, one slot. On Redis Cluster that key lives on one shard: a shard that lost its data
// alone (an empty replica promoted) is not seen by it. A marker per shard (epochKey's `tag`) is
// not built yet; CONSUMER_WAIT_REPLICAS keeps a promoted replica from being behind.

export interface EpochMarker {
  readonly id: string;
  readonly builtAtMs: number;
  /** False while the consumers replay towards the topics' end after a (re)build. */
  readonly complete: boolean;
}

export async function readEpoch(
  conn: RedisClient,
  keys: ReadModelKeys,
): Promise<EpochMarker | null> {
  const raw = await conn.get(epochKey(keys));
  if (raw === null) return null;
  try {
    const parsed = JSON.parse(raw) as Partial<EpochMarker>;
    return {
      id: String(parsed.id ?? raw),
      builtAtMs: Number(parsed.builtAtMs ?? 0),
      complete: parsed.complete !== false,
    };
  } catch {
    return { id: raw, builtAtMs: 0, complete: true };
  }
}

/** Writes a new marker unless one exists (NX: two processes starting at once agree). */
export async function writeEpoch(
  conn: RedisClient,
  keys: ReadModelKeys,
  nowMs: number,
  options: { replace?: boolean; complete?: boolean } = {},
): Promise<EpochMarker> {
  const marker: EpochMarker = {
    id: randomUUID(),
    builtAtMs: nowMs,
    complete: options.complete ?? false,
  };
  const value = JSON.stringify(marker);
  if (options.replace) {
    await conn.set(epochKey(keys), value);
    return marker;
  }
  const set = await conn.set(epochKey(keys), value, 'NX');
  return set === 'OK' ? marker : ((await readEpoch(conn, keys)) ?? marker);
}

/** The consumers reached the topics' end once since the build: the model serves again. */
export async function markEpochComplete(
  conn: RedisClient,
  keys: ReadModelKeys,
  marker: EpochMarker,
): Promise<void> {
  // XX: a marker deleted meanwhile (a wipe) is not brought back by this.
  await conn.set(epochKey(keys), JSON.stringify({ ...marker, complete: true }), 'XX');
}
