import { Redis } from 'ioredis';

/**
 * The API's Redis connection: commands fail at once while disconnected (no offline queue) and
 * after a bounded time otherwise, so a request answers 500 promptly instead of hanging.
 */
export function createApiRedis(url: string, commandTimeoutMs: number): Redis {
  return new Redis(url, {
    enableOfflineQueue: false,
    commandTimeout: commandTimeoutMs,
    maxRetriesPerRequest: 0,
    // Keep reconnecting in the background; requests meanwhile get 500, /readyz 503.
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
}
