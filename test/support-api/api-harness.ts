import { Writable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { buildApi } from '../../api/app.js';
import { createApiRedis } from '../../api/redis-client.js';
import { type Config, loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import { createSeeder, type Seeder } from '../../tools/seed/read-model-seed.js';
import { dropPrefix, redisClusterNodes, redisUrl, testRedis, uniqueId } from '../support/stack.js';

export interface TestApi {
  readonly app: FastifyInstance;
  readonly redis: RedisClient;
  readonly seed: Seeder;
  readonly config: Config;
  readonly prefix: string;
  /** Every log line the app wrote, as text. */
  readonly logLines: string[];
  /** Resolves once the API's connection is up (it refuses commands until then). */
  ready(): Promise<void>;
  close(): Promise<void>;
}

/** The API on its own Redis prefix, logging at debug into memory so tests can read the lines. */
export function testApi(
  options: {
    env?: Record<string, string>;
    clock?: () => number;
    redisUrl?: string;
    /** Receives each log line instead of `logLines` (for long runs that must not keep them). */
    onLog?: (line: string) => void;
  } = {},
): TestApi {
  const prefix = `${uniqueId('api')}:`;
  const config = loadConfig({
    REDIS_URL: options.redisUrl ?? redisUrl(),
    // A Redis given by URL (a proxy in front of the suite's single Redis) is used alone.
    REDIS_CLUSTER_NODES: options.redisUrl ? '' : redisClusterNodes(),
    REDIS_KEY_PREFIX: prefix,
    LOG_LEVEL: 'debug',
    ...options.env,
  });
  const logLines: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      if (options.onLog) options.onLog(String(chunk));
      else logLines.push(String(chunk));
      done();
    },
  });
  // The production logger (redaction, request serializer), writing into memory.
  const logger = createLogger({ level: 'debug', name: 'api' }, sink);
  const redis = createApiRedis(config.redis, config.api.redisCommandTimeoutMs);
  // Errors surface through commands; an unreachable Redis must not crash the test process.
  redis.on('error', () => undefined);
  const app = buildApi({ config, logger, redis, clock: options.clock });
  const seedRedis = testRedis({ single: options.redisUrl !== undefined });
  return {
    app,
    redis,
    seed: createSeeder(seedRedis, prefix),
    config,
    prefix,
    logLines,
    ready: () =>
      redis.status === 'ready'
        ? Promise.resolve()
        : new Promise((resolve) => redis.once('ready', () => resolve())),
    async close() {
      await app.close();
      redis.disconnect();
      if (!options.redisUrl) await dropPrefix(seedRedis, prefix);
      seedRedis.disconnect();
    },
  };
}
