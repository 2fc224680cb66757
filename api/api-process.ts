import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import type { TracingRuntime } from '../src/tracing/start-tracing.js';
import { buildApi } from './app.js';
import { releaseHeapAtRest } from './heap-tuning.js';
import { type OpsListener, startOpsListener } from './ops/ops-listener.js';
import { createApiRedis } from './redis-client.js';

// The API process, composed: config, logger, Redis, app, listeners; graceful shutdown. Imported by
// main.ts once tracing is started (or found off).

export async function runApiProcess(tracing: TracingRuntime | null): Promise<void> {
  const tracer = tracing
    ? (await import('./tracing/request-tracing.js')).createApiTracer(tracing.roots)
    : undefined;
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, name: 'api' });
  releaseHeapAtRest(logger);
  const redis = createApiRedis(config.redis, config.api.redisCommandTimeoutMs);
  redis.on('error', (error) => logger.warn({ err: { message: error.message } }, 'redis error'));
  const app = buildApi({ config, logger, redis, tracer });

  let ops: OpsListener | null = null;
  let stopping = false;
  async function shutdown(signal: string): Promise<void> {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    // Stops accepting, lets in-flight requests finish, then drops Redis.
    await Promise.all([app.close(), ops?.close()]);
    await redis.quit().catch(() => redis.disconnect());
    // The spans of the last requests go out before the process does.
    await tracing?.shutdown();
    process.exit(0);
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  // Listen once Redis is connected (or after a bound, to answer 500 and /readyz 503 meanwhile): a
  // request arriving first would find no connection and get a 500.
  await new Promise<void>((resolve) => {
    if (redis.status === 'ready') return resolve();
    const bound = setTimeout(resolve, 5_000);
    redis.once('ready', () => {
      clearTimeout(bound);
      resolve();
    });
  });
  // The ops listener first: an orchestrator probing it sees /readyz as soon as the API listens.
  if (config.api.ops.port !== null) {
    ops = await startOpsListener(app, { host: config.api.ops.host, port: config.api.ops.port });
  }
  await app.listen({ host: config.api.host, port: config.api.port });
}
