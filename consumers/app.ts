import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Config } from '../src/config.js';
import { createAccessFactStore } from '../src/read-model/access-fact-store.js';
import { createAccessViewStore } from '../src/read-model/access-store.js';
import { createDeviceStore } from '../src/read-model/device-store.js';
import { createFlowStore } from '../src/read-model/flow-store.js';
import { createInstallationStore } from '../src/read-model/installation-store.js';
import { createKeys } from '../src/read-model/keys.js';
import { createAccessProjector } from './access-projector.js';
import { createDeadLetterWriter } from './dead-letter.js';
import { startFlowAgeing } from './flow-ageing.js';
import { createInstallationsProjector } from './installations-projector.js';
import type { KafkaClient } from './kafka/client.js';
import { topicSpecs } from './kafka/topics.js';
import { createConsumerMetrics } from './metrics.js';
import { createTopicRunner, type TopicRunner } from './runner.js';
import { createTelemetryProjector } from './telemetry-projector.js';

export interface ConsumerDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly kafka: KafkaClient;
  readonly redis: Redis;
  /** Epoch ms; injectable so tests control time. */
  readonly clock?: () => number;
}

export interface ConsumerApp {
  /** Finishes the batch in hand, commits it, then leaves the groups and closes own connections. */
  stop(): Promise<void>;
  readonly metrics: Registry;
  /** Redis answers and every topic consumer is running. */
  isReady(): Promise<boolean>;
}

export async function startConsumers(deps: ConsumerDeps): Promise<ConsumerApp> {
  const { config, kafka } = deps;
  const clock = deps.clock ?? Date.now;
  const logger = deps.logger.child({ component: 'consumers' });
  const keys = createKeys(config.redis.keyPrefix);
  const metrics = createConsumerMetrics();
  const { onlineWindowSeconds, futureSkewSeconds } = config.ingest;
  const retry = { initialDelayMs: 100, maxDelayMs: config.consumer.maxRetryDelayMs };

  const admin = await kafka.createAdmin();
  try {
    await admin.ensureTopics(topicSpecs(config.topics));
  } finally {
    await admin.disconnect();
  }
  const producer = kafka.createProducer();
  await producer.connect();
  const deadLetter = createDeadLetterWriter({ producer, topic: config.topics.deadletter });

  // WATCH-based writers each need a connection of their own.
  const connections: Redis[] = [];
  const dedicated = () => {
    const conn = deps.redis.duplicate();
    // Failed commands surface in the retrying runner; the event only needs a listener.
    conn.on('error', (error) => logger.debug({ err: error }, 'redis connection error'));
    connections.push(conn);
    return conn;
  };

  const runner = (
    topic: string,
    role: string,
    projector: Parameters<typeof createTopicRunner>[0]['projector'],
    concurrentPartitions = 1,
  ) =>
    createTopicRunner({
      kafka,
      topic,
      groupId: `${config.consumer.groupId}.${role}`,
      projector,
      deadLetter,
      metrics,
      logger,
      retry,
      concurrentPartitions,
    });

  const installationsConn = dedicated();
  const accessConn = dedicated();
  const runners: TopicRunner[] = [
    runner(
      config.topics.installations,
      'installations',
      createInstallationsProjector({
        topic: config.topics.installations,
        store: createInstallationStore({ conn: installationsConn, keys }),
        access: createAccessViewStore({ conn: installationsConn, keys }),
        metrics,
        logger,
      }),
    ),
    runner(
      config.topics.access,
      'access',
      createAccessProjector({
        topic: config.topics.access,
        facts: createAccessFactStore({ conn: accessConn, keys }),
        views: createAccessViewStore({ conn: accessConn, keys }),
        metrics,
        logger,
      }),
    ),
    runner(
      config.topics.telemetry,
      'telemetry',
      createTelemetryProjector({
        topic: config.topics.telemetry,
        stores: Array.from({ length: config.consumer.telemetryConcurrency }, () =>
          createDeviceStore({ conn: dedicated(), keys, onlineWindowSeconds }),
        ),
        clock,
        futureSkewSeconds,
        metrics,
        logger,
      }),
      config.consumer.telemetryConcurrency,
    ),
  ];
  await Promise.all(runners.map((r) => r.start()));

  const ageing = startFlowAgeing({
    store: createFlowStore({ conn: dedicated(), keys, onlineWindowSeconds }),
    clock,
    intervalMs: config.consumer.flowSweepMs,
    metrics,
    logger,
  });
  logger.info({ topics: config.topics }, 'consumers started');

  return {
    metrics: metrics.registry,
    async isReady() {
      if (!runners.every((r) => r.isRunning())) return false;
      try {
        return (await deps.redis.ping()) === 'PONG';
      } catch {
        return false;
      }
    },
    async stop() {
      await ageing.stop();
      await Promise.all(runners.map((r) => r.stop()));
      await producer.disconnect();
      for (const conn of connections) conn.disconnect();
      logger.info('consumers stopped');
    },
  };
}
