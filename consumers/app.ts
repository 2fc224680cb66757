import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type { Config } from '../src/config.js';
import { registerRedisMemoryMetrics } from '../src/ops/redis-memory.js';
import { registerRuntimeMetrics } from '../src/ops/runtime-metrics.js';
import { createKeys } from '../src/read-model/keys.js';
import type { RedisClient } from '../src/read-model/redis-connection.js';
import { createDeadLetterWriter } from './dead-letter.js';
import { startFlowAgeing } from './flow-ageing.js';
import { countGcPauses } from './gc-metrics.js';
import type { Admin, KafkaClient, Producer } from './kafka/client.js';
import { deviceMovesSpec, topicSpecs } from './kafka/topics.js';
import { startLagMonitor } from './lag-monitor.js';
import { type ConsumerFailure, reportFailure } from './liveness.js';
import { createConsumerMetrics } from './metrics.js';
import { startModelGuard } from './model-guard.js';
import type { TopicRunner } from './runner.js';
import { createTopicRunners } from './topic-runners.js';
import type { BatchTracer } from './tracing/batch-tracer.js';

export interface ConsumerDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly kafka: KafkaClient;
  readonly redis: RedisClient;
  /** Epoch ms; injectable so tests control time. */
  readonly clock?: () => number;
  /**
   * A topic consumer stopped for good, after it was logged; main.ts exits the process after
   * the grace period. Readiness is false from that moment either way.
   */
  readonly onFatal?: (failure: ConsumerFailure) => void;
  /** Spans of batches and passes (consumers/tracing/); absent, tracing is off. */
  readonly tracer?: BatchTracer;
}

export interface ConsumerApp {
  /** Finishes the batch in hand, commits it, then leaves the groups and closes own connections. */
  stop(): Promise<void>;
  readonly metrics: Registry;
  /**
   * Redis answers, the broker answered lately, and every topic consumer is a member of its
   * group and consuming.
   */
  isReady(): Promise<boolean>;
  /** Reads consumer lag from the broker now instead of at the next interval. */
  refreshLag(): Promise<void>;
}

export async function startConsumers(deps: ConsumerDeps): Promise<ConsumerApp> {
  const { config, kafka } = deps;
  const clock = deps.clock ?? Date.now;
  const logger = deps.logger.child({ component: 'consumers' });
  const keys = createKeys(config.redis.keyPrefix);
  // Traced: the batch duration keeps the sampled batches' exemplars.
  const metrics = createConsumerMetrics({ exemplars: deps.tracer !== undefined });
  const stopGcCount = countGcPauses(metrics.registry);
  const { admin, producer } = await connectKafka(kafka, config);
  let fatal: ConsumerFailure | null = null;
  // The first failure is the one readiness and the exit report name.
  const markFatal = (failure: ConsumerFailure) => {
    fatal ??= failure;
  };
  const onFailure = (failure: ConsumerFailure) => {
    markFatal(failure);
    void reportFailure({
      failure,
      admin,
      logger,
      exitGraceMs: config.consumer.fatalExitGraceMs,
    }).finally(() => deps.onFatal?.(failure));
  };
  let refreshLag = async () => {};
  const { runners, telemetry, accessWorker, disconnect } = createTopicRunners({
    ...deps,
    clock,
    logger,
    keys,
    metrics,
    admin,
    producer,
    deadLetter: createDeadLetterWriter({ producer, topic: config.topics.deadletter }),
    onFailure,
    onAssigned: () => void refreshLag(),
    beforeDeadLetter: () => guard.assertIntact(),
  });
  const lag = startLagMonitor({
    admin,
    groups: runners,
    metrics,
    intervalMs: config.consumer.lagIntervalMs,
    logger,
  });
  refreshLag = lag.refresh;
  const parts = { keys, admin, runners, metrics, logger, clock };
  const guard = await guardReadModel(deps, parts, markFatal);
  metrics.modelLost.set(guard.lost() ? 1 : 0);
  if (!guard.lost()) await Promise.all(runners.map((r) => r.start()));

  const ageing = startFlowAgeing({
    age: () => telemetry.ageFlows(),
    intervalMs: config.consumer.flowSweepMs,
    logger,
  });
  logger.info({ topics: config.topics }, 'consumers started');

  // A broker that stopped answering leaves kafkajs waiting without an error: not consuming either.
  const consuming = () =>
    !fatal &&
    !guard.lost() &&
    runners.every((r) => r.isRunning()) &&
    lag.brokerAnswers() &&
    metrics.failingAlike.size === 0;
  registerRuntimeMetrics(metrics.registry, deps.redis);
  registerRedisMemoryMetrics(metrics.registry, deps.redis);
  registerReadyGauge(metrics.registry, () => consuming() && deps.redis.status === 'ready');

  return {
    metrics: metrics.registry,
    refreshLag: () => lag.refresh(),
    isReady: async () => consuming() && (await answersPing(deps.redis)),
    async stop() {
      await ageing.stop();
      // Background work first: whatever it leaves is recorded, for the partition's next owner.
      await accessWorker.stop();
      lag.stop();
      stopGcCount();
      guard.stop();
      await Promise.all(runners.map((r) => r.stop()));
      await producer.disconnect();
      await admin.disconnect();
      disconnect();
      logger.info('consumers stopped');
    },
  };
}

/** The lost-model guard: a lost read model stops every runner at once (main.ts then exits). */
function guardReadModel(
  deps: ConsumerDeps,
  parts: {
    keys: ReturnType<typeof createKeys>;
    admin: Admin;
    runners: readonly TopicRunner[];
    metrics: ReturnType<typeof createConsumerMetrics>;
    logger: Logger;
    clock: () => number;
  },
  onLost: (failure: ConsumerFailure) => void,
) {
  const { runners, metrics } = parts;
  return startModelGuard({
    redis: deps.redis,
    keys: parts.keys,
    admin: parts.admin,
    groups: runners,
    intervalMs: deps.config.consumer.lagIntervalMs,
    clock: parts.clock,
    logger: parts.logger,
    onLost: () => {
      metrics.modelLost.set(1);
      const failure = readModelLost(runners, deps.config.consumer.groupId);
      onLost(failure);
      // Stop consuming at once; the process exits after the grace period (main.ts).
      void Promise.all(runners.map((r) => r.stop())).finally(() => deps.onFatal?.(failure));
    },
  });
}

/**
 * The admin (kept open: lag and failure reports read offsets from the broker) and the producer,
 * once every topic the consumers read or write exists.
 */
async function connectKafka(
  kafka: KafkaClient,
  config: Config,
): Promise<{ admin: Admin; producer: Producer }> {
  const admin = await kafka.createAdmin();
  await admin.ensureTopics([
    ...topicSpecs(config.topics),
    deviceMovesSpec(config.consumer.groupId),
  ]);
  const producer = kafka.createProducer();
  await producer.connect();
  return { admin, producer };
}

/** One failure for every topic: Redis lost the read model, and projecting on would corrupt it. */
function readModelLost(runners: readonly TopicRunner[], groupId: string): ConsumerFailure {
  return {
    topic: runners.map((r) => r.topic).join(','),
    groupId,
    reason: 'read_model_lost',
    error: new Error('epoch marker missing'),
    partitions: [],
  };
}

// Readiness as a series, so an alert sees a process that answers scrapes but does not consume.
function registerReadyGauge(registry: Registry, ready: () => boolean): void {
  new Gauge({
    name: 'ingest_ready',
    help: '1 while every topic consumer runs and the Redis client is connected (what /readyz checks, without its PING)',
    registers: [registry],
    collect() {
      this.set(ready() ? 1 : 0);
    },
  });
}

async function answersPing(redis: RedisClient): Promise<boolean> {
  try {
    return (await redis.ping()) === 'PONG';
  } catch {
    return false;
  }
}
