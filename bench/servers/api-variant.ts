import { Redis } from 'ioredis';
import { buildApi } from '../../api/app.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';

// An experiment, not the product: the project's own buildApi composed with a Redis client that
// differs from api/redis-client.ts only in `enableAutoPipelining`, so the bench can measure what
// that option would change without touching api/. Same environment variables as api/main.ts.

const config = loadConfig();
const logger = createLogger({ level: config.logLevel, name: 'api-variant' });
const redis = new Redis(config.redis.url, {
  enableOfflineQueue: false,
  commandTimeout: config.api.redisCommandTimeoutMs,
  maxRetriesPerRequest: 0,
  enableAutoPipelining: true,
});
const app = buildApi({ config, logger, redis });
process.on('SIGTERM', () => {
  void app.close().then(() => {
    redis.disconnect();
    process.exit(0);
  });
});
await app.listen({ host: config.api.host, port: config.api.port });
