import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Config } from '../config.js';

// The one place a process connects to Redis: the single Redis at REDIS_URL, or the Redis
// Cluster of REDIS_CLUSTER_NODES. Everything else takes a RedisClient and runs the same code on
// both: every command, script and pipeline group stays in one slot (keys.ts hash tags), and
// pipelines that span installations are split per node (slot-pipeline.ts).

export type RedisClient = Redis | Cluster;

/** How often a cluster client re-reads the slot map, whatever it saw (see connectRedis). */
const SLOTS_REFRESH_MS = 2_000;

export const isCluster = (redis: RedisClient): redis is Cluster => redis instanceof Cluster;

/**
 * Connects with a role's options (per node on a cluster). `replicas`: on a cluster, read-only
 * commands go to replicas (ioredis's scaleReads; its replica connections send READONLY).
 */
export function connectRedis(
  config: Config['redis'],
  options: RedisOptions = {},
  replicas = false,
): RedisClient {
  if (config.clusterNodes.length === 0) return new Redis(config.url, options);
  const { enableOfflineQueue = true, retryStrategy, ...perNode } = options;
  // Credentials come from REDIS_URL, so a secret lives in one setting whatever the topology.
  const url = new URL(config.url);
  return new Cluster([...config.clusterNodes], {
    enableOfflineQueue,
    // No auto-pipelining: it builds a Pipeline per node and turn, and a request's read is mostly
    // alone in its turn, so it cost more CPU than it saved (a GET at 64 concurrent: 14-21 µs
    // against 12-13 µs without). The API's reads share socket writes through write-batching.ts,
    // which corks every node's connection for a turn (6-9 µs, as on a single Redis).
    // A pipeline (ours or auto-pipelined) whose replies mix MOVED with successes hands the error
    // to the callers without refreshing ioredis's slot map, and ioredis refreshes none on a
    // timer by default: after a failover such reads failed until the process restarted.
    slotsRefreshInterval: SLOTS_REFRESH_MS,
    ...(replicas ? { scaleReads: 'slave' as const } : {}),
    ...(retryStrategy ? { clusterRetryStrategy: retryStrategy } : {}),
    redisOptions: {
      ...perNode,
      ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
      ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    },
  });
}

/**
 * A connection of its own to the same Redis or cluster (writers, watchers, the change
 * subscriber). `subscriber`: on a cluster, SSUBSCRIBE goes to a subscriber per shard.
 */
export function duplicateConnection(
  redis: RedisClient,
  options: RedisOptions = {},
  subscriber = false,
): RedisClient {
  if (!isCluster(redis)) return redis.duplicate(options);
  const { enableOfflineQueue, ...perNode } = options;
  return redis.duplicate([], {
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    shardedSubscribers: subscriber,
    redisOptions: { ...redis.options.redisOptions, ...perNode },
  });
}

/** Every key matching `pattern`, a page at a time: SCAN on the one Redis, or on every master. */
export async function* scanKeys(redis: RedisClient, pattern: string): AsyncGenerator<string[]> {
  for (const node of isCluster(redis) ? redis.nodes('master') : [redis]) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (found.length > 0) yield found;
    } while (cursor !== '0');
  }
}
