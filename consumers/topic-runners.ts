import type { Logger } from 'pino';
import type { Config } from '../src/config.js';
import { groupIdOf, type Role } from '../src/consumer-groups.js';
import { MAX_MESSAGE_BYTES } from '../src/domain/limits.js';
import {
  type DeviceReleasedEvent,
  serializeDeviceReleased,
} from '../src/projection/device-released.js';
import { createAccessFactStore } from '../src/read-model/access-fact-store.js';
import { createAccessWork } from '../src/read-model/access-store.js';
import { createInstallationStore } from '../src/read-model/installation-store.js';
import type { ReadModelKeys } from '../src/read-model/keys.js';
import { duplicateConnection, type RedisClient } from '../src/read-model/redis-connection.js';
import { createAccessProjector } from './access-projector.js';
import { type AccessWorker, createAccessWorker } from './access-worker.js';
import type { DeadLetterWriter } from './dead-letter.js';
import { createDeviceMovesProjector } from './device-moves-projector.js';
import { createInstallationsProjector } from './installations-projector.js';
import type { Admin, KafkaClient, Producer } from './kafka/client.js';
import { deviceMovesTopic } from './kafka/topics.js';
import type { ConsumerFailure } from './liveness.js';
import type { ConsumerMetrics } from './metrics.js';
import { createPool } from './pool.js';
import type { Projector } from './projector.js';
import { registryDecoding } from './registry-decoding.js';
import { waitingForReplicas } from './replica-wait.js';
import { createTopicRunner, type TopicRunner } from './runner.js';
import {
  createTelemetryProjector,
  releasesCounter,
  type TelemetryProjector,
} from './telemetry-projector.js';
import { createOwnedState } from './telemetry-state.js';
import type { BatchTracer } from './tracing/batch-tracer.js';

// One runner per input topic, each in a consumer group of its own, its projector writing over a
// Redis connection of its own.

export interface TopicRunnersDeps {
  readonly config: Config;
  readonly kafka: KafkaClient;
  readonly admin: Admin;
  readonly producer: Producer;
  readonly deadLetter: DeadLetterWriter;
  readonly redis: RedisClient;
  readonly metrics: ConsumerMetrics;
  readonly logger: Logger;
  readonly keys: ReadModelKeys;
  readonly clock: () => number;
  readonly onFailure: (failure: ConsumerFailure) => void;
  /** After any group assigned partitions. */
  readonly onAssigned: () => void;
  readonly beforeDeadLetter: () => Promise<void>;
  /** Spans of batches, passes and their phases; absent, tracing is off. */
  readonly tracer?: BatchTracer;
}

export interface TopicRunners {
  /** Installations, access, telemetry, device moves: started and stopped together. */
  readonly runners: readonly TopicRunner[];
  /** The telemetry projector, whose flows the ageing sweep recomputes. */
  readonly telemetry: TelemetryProjector;
  /** Derives the access entries the installations and access batches recorded. */
  readonly accessWorker: AccessWorker;
  /** Closes the projectors' own Redis connections. */
  disconnect(): void;
}

// Batches of the installations and access topics projected at once (their default partition
// count): a revocation on one partition never waits for another partition's batch of grants.
const FACT_PARTITIONS_AT_ONCE = 3;

type RunnerFor = (
  topic: string,
  role: Role,
  projector: Projector,
  /** The connections its projector writes on (a batch waits for replicas on each). */
  conns: readonly RedisClient[],
  concurrentPartitions?: number,
  onAssigned?: () => void,
) => TopicRunner;

export function createTopicRunners(deps: TopicRunnersDeps): TopicRunners {
  const { config, keys, metrics, logger } = deps;
  // Registry-framed values on the installations and telemetry topics (registry-decoding.ts).
  const decoding = registryDecoding(config.schemaRegistry);
  const connections = dedicatedConnections(deps.redis, logger);
  const runner = runnerFor(deps);
  const movesTopic = deviceMovesTopic(config.consumer.groupId);
  // Traced: the writes announce the sampled span writing them with their change.
  const traceparent = deps.tracer?.traceparent;
  // One per partition projected at once: a partition waits only for its own pipelines.
  const telemetryConns = Array.from({ length: config.consumer.telemetryConcurrency }, () =>
    connections.open(),
  );
  const movesConn = connections.open();
  const { telemetry, moves } = telemetryProjectors(deps, movesTopic, telemetryConns, movesConn);
  const telemetryRunner: TopicRunner = runner(
    config.topics.telemetry,
    'telemetry',
    decoding(telemetry, MAX_MESSAGE_BYTES.telemetry),
    telemetryConns,
    config.consumer.telemetryConcurrency,
    // The partitions this process owns now: the state of any other is forgotten.
    () => telemetry.assigned(telemetryRunner.assignment()),
  );
  const installationsConn = connections.open();
  const accessConn = connections.open();
  // A connection of its own: a chunk's pipelines never queue before a batch's commands.
  const accessWorker = createAccessWorker({
    work: createAccessWork({ conn: connections.open(), keys, traceparent }),
    metrics,
    logger,
    maxRetryDelayMs: config.consumer.maxRetryDelayMs,
  });
  const onWork = () => accessWorker.kick();
  const installations = createInstallationsProjector({
    topic: config.topics.installations,
    store: createInstallationStore({ conn: installationsConn, keys, traceparent }),
    access: createAccessWork({ conn: installationsConn, keys, traceparent }),
    onWork,
    metrics,
    logger,
  });
  const access = createAccessProjector({
    topic: config.topics.access,
    facts: createAccessFactStore({ conn: accessConn, keys }),
    work: createAccessWork({ conn: accessConn, keys, traceparent }),
    onWork,
    metrics,
    logger,
  });
  // The access worker takes up the recorded work of whatever partitions these two own.
  const recordingRunner = (topic: string, role: Role, projector: Projector, conn: RedisClient) => {
    const first = accessWorker.yieldingTo(projector);
    const r: TopicRunner = runner(topic, role, first, [conn], FACT_PARTITIONS_AT_ONCE, () =>
      accessWorker.assigned(topic, r.assignment()),
    );
    return r;
  };
  const installationsRunner = recordingRunner(
    config.topics.installations,
    'installations',
    decoding(installations, MAX_MESSAGE_BYTES.installations),
    installationsConn,
  );
  const accessRunner = recordingRunner(config.topics.access, 'access', access, accessConn);
  return {
    runners: [
      installationsRunner,
      accessRunner,
      telemetryRunner,
      runner(movesTopic, 'moves', moves, [movesConn]),
    ],
    telemetry,
    accessWorker,
    disconnect: connections.disconnect,
  };
}

/** A runner for one topic, in the group of its role. */
function runnerFor(deps: TopicRunnersDeps): RunnerFor {
  const { config } = deps;
  const retry = { initialDelayMs: 100, maxDelayMs: config.consumer.maxRetryDelayMs };
  // Offsets commit once the batch's writes are where CONSUMER_WAIT_REPLICAS asks (replica-wait.ts).
  const durable = (projector: Projector, conns: readonly RedisClient[]) =>
    waitingForReplicas(
      projector,
      conns,
      config.consumer.waitReplicas,
      config.consumer.waitTimeoutMs,
    );
  return (topic, role, projector, conns, concurrentPartitions = 1, onAssigned = () => {}) =>
    createTopicRunner({
      kafka: deps.kafka,
      admin: deps.admin,
      topic,
      groupId: groupIdOf(config, role),
      projector: durable(projector, conns),
      deadLetter: deps.deadLetter,
      metrics: deps.metrics,
      logger: deps.logger,
      retry,
      concurrentPartitions,
      sessionTimeoutMs: config.consumer.sessionTimeoutMs,
      rejoinTimeoutMs: config.consumer.rejoinTimeoutMs,
      onFailure: deps.onFailure,
      onAssigned: () => {
        onAssigned();
        deps.onAssigned();
      },
      beforeDeadLetter: deps.beforeDeadLetter,
      tracer: deps.tracer,
    });
}

/** Telemetry and the device moves it causes: both send device.released and count them. */
function telemetryProjectors(
  deps: TopicRunnersDeps,
  movesTopic: string,
  telemetryConns: readonly RedisClient[],
  movesConn: RedisClient,
): { telemetry: TelemetryProjector; moves: Projector } {
  const { config, keys, clock, metrics, logger } = deps;
  const { onlineWindowSeconds, futureSkewSeconds } = config.ingest;
  const releases = releasesCounter(metrics.registry);
  const sendReleases = async (events: readonly DeviceReleasedEvent[]) => {
    await deps.producer.send(
      movesTopic,
      events.map((e) => ({ key: String(e.installationId), value: serializeDeviceReleased(e) })),
    );
    releases.inc({ direction: 'sent' }, events.length);
  };
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
    conns: createPool(telemetryConns),
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
    trace: deps.tracer?.phases,
  });
  return { telemetry, moves };
}

/** Each writer keeps a connection of its own, so one slow pipeline does not queue the others. */
function dedicatedConnections(redis: RedisClient, logger: Logger) {
  const connections: RedisClient[] = [];
  return {
    open(): RedisClient {
      const conn = duplicateConnection(redis);
      // Failed commands surface in the retrying runner; the event only needs a listener.
      conn.on('error', (error) => logger.debug({ err: error }, 'redis connection error'));
      connections.push(conn);
      return conn;
    },
    disconnect() {
      for (const conn of connections) conn.disconnect();
    },
  };
}
