import type { Config } from '../src/config.js';
import { connectRedis, type RedisClient } from '../src/read-model/redis-connection.js';

/**
 * The API's Redis connection: commands fail at once while disconnected (no offline queue) and
 * after a bounded time otherwise, so a request answers 500 promptly instead of hanging.
 */
export function createApiRedis(redis: Config['redis'], commandTimeoutMs: number): RedisClient {
  return connectRedis(redis, {
    enableOfflineQueue: false,
    commandTimeout: commandTimeoutMs,
    maxRetriesPerRequest: 0,
    // Keep reconnecting in the background; requests meanwhile get 500, /readyz 503.
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
}
