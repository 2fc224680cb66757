import calculateSlot from 'cluster-key-slot';
import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from '../../src/read-model/redis-connection.js';
import { type ApiRedis, withApiScripts } from './api-scripts.js';

// On a cluster, ioredis's Cluster routes every command anew: a wrapped reject with its
// redirection handlers, closures per try. For the API's small reads that was most of what a
// cluster read cost over a single Redis's (a flow read, 64 at a time: ~9.7 µs of CPU against
// ~5.7; sent this way ~7.0). A read goes straight to the connection of its slot's master as
// ioredis's slot map knows it. Whatever the Cluster would handle (a redirection after a failover
// or during a resharding, a node down or closing) sends the read through the Cluster instead,
// which follows it and refreshes its map. Reads only: they are safe to send twice. With
// replicas (API_REDIS_READ_REPLICAS), a read goes to one of the slot's replicas instead, and
// the Cluster it falls back to sends read-only commands to replicas too (scaleReads).

/** Sends `read` to the connection that serves `key`: the one Redis, or a cluster's node. */
export type SendTo = <T>(key: string, read: (redis: ApiRedis) => Promise<T>) => Promise<T>;

// ioredis keeps its node connections in a pool it does not export; a read falls back to the
// Cluster whenever the pool is not what this expects.
interface NodePool {
  getInstanceByKey(nodeKey: string): Redis | undefined;
}

const REROUTED = /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN) |^Connection is closed\./;

export function slotRouter(connection: RedisClient, replicas = false): SendTo {
  const redis = withApiScripts(connection);
  if (!isCluster(connection)) return (_key, read) => read(redis);
  const cluster = connection;
  const pool = (cluster as unknown as { connectionPool?: NodePool }).connectionPool;
  const scripted = new WeakSet<Redis>();
  let turn = 0;

  /** The slot's master, or with `replicas` one of its replicas in turn (the master if none). */
  function serverOf(slot: number): string | undefined {
    const servers = cluster.slots[slot];
    if (!replicas || servers === undefined || servers.length < 2) return servers?.[0];
    turn = (turn + 1) % (servers.length - 1);
    return servers[1 + turn];
  }

  function nodeOf(key: string): ApiRedis | null {
    const server = serverOf(calculateSlot(key));
    const node = server === undefined ? undefined : pool?.getInstanceByKey(server);
    // As the Cluster does: a node not yet used connects on its first command ('wait').
    if (node === undefined || (node.status !== 'ready' && node.status !== 'wait')) return null;
    if (!scripted.has(node)) {
      withApiScripts(node);
      scripted.add(node);
    }
    return node as ApiRedis;
  }

  return (key, read) => {
    const node = nodeOf(key);
    if (node === null) return read(redis);
    return read(node).catch((error: unknown) => {
      if (error instanceof Error && REROUTED.test(error.message)) return read(redis);
      throw error;
    });
  };
}
