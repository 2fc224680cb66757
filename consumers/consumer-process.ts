import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { connectRedis } from '../src/read-model/redis-connection.js';
import type { TracingRuntime } from '../src/tracing/start-tracing.js';
import { startConsumers } from './app.js';
import { startHealthServer } from './health-server.js';
import { createKafkajsClient } from './kafka/kafkajs-client.js';

// The consumer process, composed: config, logger, Redis, Kafka, consumers, health server,
// shutdown. Imported by main.ts once tracing is started (or found off).

export async function runConsumerProcess(tracing: TracingRuntime | null): Promise<void> {
  const tracer = tracing
    ? (await import('./tracing/batch-tracing.js')).createBatchTracer(tracing.roots)
    : undefined;
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, name: 'consumers' });
  const redis = connectRedis(config.redis, { maxRetriesPerRequest: 1 });
  redis.on('error', (error) => logger.warn({ err: error }, 'redis connection error'));
  const kafka = createKafkajsClient({
    brokers: config.kafka.brokers,
    clientId: config.kafka.clientId,
    logger,
    traceHeaders: tracer?.headers,
  });

  // A consumer stopped for good: readiness is already false; give scrapes and the log a moment,
  // leave the groups (so an operator can move their offsets at once), then exit non-zero so the
  // supervisor restarts the process (docs/operations.md).
  let leave = async () => {};
  const onFatal = () => {
    setTimeout(() => {
      logger.fatal('exiting: a topic consumer stopped for good');
      const exit = () => process.exit(1);
      setTimeout(exit, 10_000).unref();
      leave()
        .then(() => tracing?.shutdown())
        .then(exit, exit);
    }, config.consumer.fatalExitGraceMs);
  };
  const app = await startConsumers({ config, logger, kafka, redis, onFatal, tracer });
  leave = () => app.stop();
  const health = await startHealthServer({
    port: config.consumer.healthPort,
    host: config.consumer.healthHost,
    registry: app.metrics,
    isReady: () => app.isReady(),
    logger,
  });
  logger.info({ healthPort: health.port }, 'consumer process ready');

  let stopping = false;
  async function shutdown(signal: string): Promise<void> {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing the batch in hand');
    const force = setTimeout(() => {
      logger.error('shutdown took longer than 30 s; exiting');
      process.exit(1);
    }, 30_000);
    force.unref();
    try {
      await app.stop();
      await health.close();
      redis.disconnect();
      // The spans of the last batches go out before the process does.
      await tracing?.shutdown();
      process.exit(0);
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exit(1);
    }
  }
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}
