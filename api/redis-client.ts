import type { RedisOptions } from 'ioredis';
import type { Config } from '../src/config.js';
import { connectRedis, type RedisClient } from '../src/read-model/redis-connection.js';

/**
 * The API's Redis connection: commands fail at once while disconnected (no offline queue) and
 * after a bounded time otherwise, so a request answers 500 promptly instead of hanging.
 */
export function createApiRedis(redis: Config['redis'], commandTimeoutMs: number): RedisClient {
  return connectRedis(redis, apiOptions(commandTimeoutMs));
}

/**
 * Where the reads that keep nothing go when API_REDIS_READ_REPLICAS is on: the cluster again,
 * its read-only commands sent to replicas, or the single Redis's replica. Null when off.
 */
export function createApiReplicaRedis(config: Config): RedisClient | null {
  const { api, redis } = config;
  if (!api.readReplicas) return null;
  const options = apiOptions(api.redisCommandTimeoutMs);
  if (redis.clusterNodes.length > 0) return connectRedis(redis, options, true);
  return connectRedis({ ...redis, url: api.replicaUrl ?? redis.url }, options);
}

const apiOptions = (commandTimeoutMs: number): RedisOptions => ({
  enableOfflineQueue: false,
  commandTimeout: commandTimeoutMs,
  maxRetriesPerRequest: 0,
  // Keep reconnecting in the background; requests meanwhile get 500, /readyz 503.
  retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
});
