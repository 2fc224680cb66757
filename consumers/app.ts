import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import type { Config } from '../src/config.js';
import { registerRedisMemoryMetrics } from '../src/ops/redis-memory.js';
import { registerRuntimeMetrics } from '../src/ops/runtime-metrics.js';
import {
  type DeviceReleasedEvent,
  serializeDeviceReleased,
} from '../src/projection/device-released.js';
import { createAccessFactStore } from '../src/read-model/access-fact-store.js';
import { createAccessViewStore } from '../src/read-model/access-store.js';
import { createInstallationStore } from '../src/read-model/installation-store.js';
import { createKeys } from '../src/read-model/keys.js';
import { duplicateConnection, type RedisClient } from '../src/read-model/redis-connection.js';
import { createAccessProjector } from './access-projector.js';
import { createDeadLetterWriter } from './dead-letter.js';
import { createDeviceMovesProjector } from './device-moves-projector.js';
import { startFlowAgeing } from './flow-ageing.js';
import { countGcPauses } from './gc-metrics.js';
import { createInstallationsProjector } from './installations-projector.js';
import type { KafkaClient } from './kafka/client.js';
import { deviceMovesSpec, deviceMovesTopic, topicSpecs } from './kafka/topics.js';
import { startLagMonitor } from './lag-monitor.js';
import { type ConsumerFailure, reportFailure } from './liveness.js';
import { createConsumerMetrics } from './metrics.js';
import { startModelGuard } from './model-guard.js';
import { waitingForReplicas } from './replica-wait.js';
import { createTopicRunner, type Projector, type TopicRunner } from './runner.js';
import { createTelemetryProjector, releasesCounter } from './telemetry-projector.js';
import { createOwnedState } from './telemetry-state.js';

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
  const metrics = createConsumerMetrics();
  const stopGcCount = countGcPauses(metrics.registry);
  const { onlineWindowSeconds, futureSkewSeconds } = config.ingest;
  const retry = { initialDelayMs: 100, maxDelayMs: config.consumer.maxRetryDelayMs };

  // Kept open: lag and failure reports read offsets from the broker.
  const admin = await kafka.createAdmin();
  await admin.ensureTopics([
    ...topicSpecs(config.topics),
    deviceMovesSpec(config.consumer.groupId),
  ]);
  let fatal: ConsumerFailure | null = null;
  const onFailure = (failure: ConsumerFailure) => {
    fatal ??= failure;
    void reportFailure({
      failure,
      admin,
      logger,
      exitGraceMs: config.consumer.fatalExitGraceMs,
    }).finally(() => deps.onFatal?.(failure));
  };
  let refreshLag = async () => {};
  const producer = kafka.createProducer();
  await producer.connect();
  const deadLetter = createDeadLetterWriter({ producer, topic: config.topics.deadletter });

  // Each writer keeps a connection of its own, so one slow pipeline does not queue the others.
  const connections: RedisClient[] = [];
  const dedicated = () => {
    const conn = duplicateConnection(deps.redis);
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
    onAssigned: () => void = () => {},
  ) =>
    createTopicRunner({
      kafka,
      admin,
      topic,
      groupId: `${config.consumer.groupId}.${role}`,
      projector,
      deadLetter,
      metrics,
      logger,
      retry,
      concurrentPartitions,
      sessionTimeoutMs: config.consumer.sessionTimeoutMs,
      rejoinTimeoutMs: config.consumer.rejoinTimeoutMs,
      onFailure,
      onAssigned: () => {
        onAssigned();
        void refreshLag();
      },
      beforeDeadLetter: () => guard.assertIntact(),
    });

  // Offsets commit once the batch's writes are where CONSUMER_WAIT_REPLICAS asks (replica-wait.ts).
  const durable = (projector: Projector, conn: RedisClient) =>
    waitingForReplicas(
      projector,
      conn,
      config.consumer.waitReplicas,
      config.consumer.waitTimeoutMs,
    );
  const telemetryConn = dedicated();
  const movesTopic = deviceMovesTopic(config.consumer.groupId);
  const releases = releasesCounter(metrics.registry);
  const sendReleases = async (events: readonly DeviceReleasedEvent[]) => {
    await producer.send(
      movesTopic,
      events.map((e) => ({ key: String(e.installationId), value: serializeDeviceReleased(e) })),
    );
    releases.inc({ direction: 'sent' }, events.length);
  };
  const movesConn = dedicated();
  const moves = createDeviceMovesProjector({
    conn: movesConn,
    keys,
    ctx: () => ({ nowMs: clock(), futureSkewSeconds, onlineWindowSeconds }),
    sendReleases,
    releases,
    logger,
  });
  const telemetry = createTelemetryProjector({
    topic: config.topics.telemetry,
    conn: telemetryConn,
    keys,
    owned: createOwnedState({
      installationsPerPartition: config.consumer.stateInstallationsPerPartition,
      registry: metrics.registry,
    }),
    clock,
    futureSkewSeconds,
    onlineWindowSeconds,
    sendReleases,
    releases,
    metrics,
    logger,
  });
  const telemetryRunner: TopicRunner = runner(
    config.topics.telemetry,
    'telemetry',
    durable(telemetry, telemetryConn),
    config.consumer.telemetryConcurrency,
    // The partitions this process owns now: the state of any other is forgotten.
    () => telemetry.assigned(telemetryRunner.assignment()),
  );
  const installationsConn = dedicated();
  const accessConn = dedicated();
  const runners: TopicRunner[] = [
    runner(
      config.topics.installations,
      'installations',
      durable(
        createInstallationsProjector({
          topic: config.topics.installations,
          store: createInstallationStore({ conn: installationsConn, keys }),
          access: createAccessViewStore({ conn: installationsConn, keys }),
          metrics,
          logger,
        }),
        installationsConn,
      ),
    ),
    runner(
      config.topics.access,
      'access',
      durable(
        createAccessProjector({
          topic: config.topics.access,
          facts: createAccessFactStore({ conn: accessConn, keys }),
          views: createAccessViewStore({ conn: accessConn, keys }),
          metrics,
          logger,
        }),
        accessConn,
      ),
    ),
    telemetryRunner,
    runner(movesTopic, 'moves', durable(moves, movesConn)),
  ];
  const lag = startLagMonitor({
    admin,
    groups: runners,
    metrics,
    intervalMs: config.consumer.lagIntervalMs,
    logger,
  });
  refreshLag = lag.refresh;
  const guard = await startModelGuard({
    redis: deps.redis,
    keys,
    admin,
    groups: runners,
    intervalMs: config.consumer.lagIntervalMs,
    clock,
    logger,
    onLost: () => {
      metrics.modelLost.set(1);
      const failure: ConsumerFailure = {
        topic: runners.map((r) => r.topic).join(','),
        groupId: config.consumer.groupId,
        reason: 'read_model_lost',
        error: new Error('epoch marker missing'),
        partitions: [],
      };
      fatal ??= failure;
      // Stop consuming at once; the process exits after the grace period (main.ts).
      void Promise.all(runners.map((r) => r.stop())).finally(() => deps.onFatal?.(failure));
    },
  });
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
    !fatal && !guard.lost() && runners.every((r) => r.isRunning()) && lag.brokerAnswers();
  registerRuntimeMetrics(metrics.registry, deps.redis);
  registerRedisMemoryMetrics(metrics.registry, deps.redis);
  // Readiness as a series, so an alert sees a process that answers scrapes but does not consume.
  new Gauge({
    name: 'ingest_ready',
    help: '1 while every topic consumer runs and the Redis client is connected (what /readyz checks, without its PING)',
    registers: [metrics.registry],
    collect() {
      this.set(consuming() && deps.redis.status === 'ready' ? 1 : 0);
    },
  });

  return {
    metrics: metrics.registry,
    refreshLag: () => lag.refresh(),
    async isReady() {
      if (!consuming()) return false;
      try {
        return (await deps.redis.ping()) === 'PONG';
      } catch {
        return false;
      }
    },
    async stop() {
      await ageing.stop();
      lag.stop();
      stopGcCount();
      guard.stop();
      await Promise.all(runners.map((r) => r.stop()));
      await producer.disconnect();
      await admin.disconnect();
      for (const conn of connections) conn.disconnect();
      logger.info('consumers stopped');
    },
  };
}
