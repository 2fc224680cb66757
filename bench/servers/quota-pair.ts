import { buildApi } from '../../api/app.js';
import { createApiRedis } from '../../api/redis-client.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';

// An experiment, not the product: two APIs in one process, the project's own buildApi with
// quotas off on API_PORT and on (QUOTA_PAIR_REQUESTS_PER_MINUTE) on API_PORT + 1. Set against
// each other from two processes, identical APIs measured 0.94x-1.16x apart on this machine;
// in one process both share the JIT, the heap and the scheduler, so what differs is the quota.
// Same environment variables as api/main.ts.

const logger = createLogger({ level: 'warn', name: 'quota-pair' });
const off = loadConfig({ ...process.env, API_QUOTA_REQUESTS_PER_MINUTE: '0' });
const on = loadConfig({
  ...process.env,
  API_PORT: String(off.api.port + 1),
  API_QUOTA_REQUESTS_PER_MINUTE: process.env.QUOTA_PAIR_REQUESTS_PER_MINUTE ?? '1000000000',
});
const apps = [on, off].map((config) => {
  const redis = createApiRedis(config.redis, config.api.redisCommandTimeoutMs);
  return { config, redis, app: buildApi({ config, logger, redis }) };
});
process.on('SIGTERM', () => {
  void Promise.all(apps.map(({ app }) => app.close())).then(() => {
    for (const { redis } of apps) redis.disconnect();
    process.exit(0);
  });
});
// The quota API first: once the other answers /healthz, both do.
for (const { app, config } of apps)
  await app.listen({ host: config.api.host, port: config.api.port });
