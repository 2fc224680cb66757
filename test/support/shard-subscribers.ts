import { isCluster, type RedisClient } from '../../src/read-model/redis-connection.js';

/**
 * Connections subscribed to a sharded channel. Asked of every master on a cluster: only the
 * channel's shard counts its subscribers.
 */
export async function shardSubscribers(redis: RedisClient, channel: string): Promise<number> {
  let count = 0;
  for (const node of isCluster(redis) ? redis.nodes('master') : [redis]) {
    const [, n] = (await node.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
    count += Number(n);
  }
  return count;
}
