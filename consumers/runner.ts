import type { Logger } from 'pino';
import { createBatchHandler, withHeartbeats } from './batch-handler.js';
import type { DeadLetterWriter } from './dead-letter.js';
import type { Admin, BatchConsumer, ConsumerEvents, KafkaClient } from './kafka/client.js';
import { onUndecodableBatch, type UndecodableBatchError } from './kafka/codecs.js';
import {
  type ConsumerFailure,
  findUndecodable,
  partitionsHolding,
  positionsOf,
  type StoppedAt,
} from './liveness.js';
import type { ConsumerMetrics } from './metrics.js';
import type { Projector } from './projector.js';
import type { RetryPolicy } from './retry.js';
import type { BatchTracer } from './tracing/batch-tracer.js';

// One consumer group per input topic: validate and project a batch, dead-letter its rejects,
// and only then let the client commit (batch-handler.ts). Retriable failures retry the whole
// batch; any other failure is isolated to the one message that causes it.

export interface TopicRunner {
  readonly topic: string;
  readonly groupId: string;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** A member of its group and consuming; false from the moment anything stopped it. */
  isRunning(): boolean;
  /** Partitions the group assigned to this process (kept after a crash, so lag keeps showing). */
  assignment(): readonly number[];
}

export interface TopicRunnerDeps {
  kafka: KafkaClient;
  /** Reads the group's offsets to find which partition stands at an undecodable batch. */
  admin: Admin;
  topic: string;
  groupId: string;
  projector: Projector;
  deadLetter: DeadLetterWriter;
  metrics: ConsumerMetrics;
  logger: Logger;
  retry: RetryPolicy;
  /** Partition batches projected at once; the projector must allow it (default 1). */
  concurrentPartitions?: number;
  sessionTimeoutMs?: number;
  /** How long a crashed consumer that kafkajs restarts may take to rejoin its group. */
  rejoinTimeoutMs: number;
  /** Called once when this consumer stopped for good (the process should exit). */
  onFailure(failure: ConsumerFailure): void;
  /** Called when the group assigned partitions (e.g. to refresh lag at once). */
  onAssigned?(): void;
  /**
   * Before a batch's rejects are dead-lettered: throws (retriable) when the read model lost its
   * data, since then the rejects are the store's fault, not the events'.
   */
  beforeDeadLetter?(): Promise<void>;
  /** Spans of its batches; absent, tracing is off. */
  tracer?: BatchTracer;
}

export function createTopicRunner(deps: TopicRunnerDeps): TopicRunner {
  const { topic, groupId } = deps;
  const logger = deps.logger.child({ topic, groupId });
  const membership = trackMembership({ ...deps, logger });
  let consumer: BatchConsumer | null = null;
  let stopListening = () => {};
  let locating = false;
  // A failed decode names offsets, not a topic: the partition of this topic whose committed
  // offset lies inside the batch is the one stopped at it. Checked again on each refetch,
  // since the records before the batch may still be in projection.
  const locate = async (error: UndecodableBatchError) => {
    const { baseOffset, lastOffset } = error;
    if (locating || membership.over() || baseOffset === null || lastOffset === null) return;
    locating = true;
    try {
      const failure: ConsumerFailure = {
        topic,
        groupId,
        reason: 'undecodable_batch',
        error,
        partitions: membership.assignment(),
      };
      const here = await positionAtBatch(deps.admin, failure, baseOffset, lastOffset);
      if (!here) return;
      consumer?.pause(topic, here.partition);
      membership.fail({
        ...failure,
        partitions: membership.assignment(),
        at: { partition: here.partition, offset: here.committed },
      });
    } catch (lookup) {
      logger.warn({ err: lookup }, 'could not read group offsets to place an undecodable batch');
    } finally {
      locating = false;
    }
  };

  return {
    async start() {
      stopListening = onUndecodableBatch((error) => void locate(error));
      consumer = deps.kafka.createConsumer({
        groupId,
        topics: [topic],
        fromBeginning: true,
        ...(deps.concurrentPartitions ? { concurrentPartitions: deps.concurrentPartitions } : {}),
        ...(deps.sessionTimeoutMs ? { sessionTimeoutMs: deps.sessionTimeoutMs } : {}),
        events: membership.events,
      });
      await consumer.start(withHeartbeats(createBatchHandler({ ...deps, logger })));
    },
    async stop() {
      membership.stop();
      stopListening();
      await consumer?.stop();
    },
    isRunning: membership.isRunning,
    assignment: membership.assignment,
    topic,
    groupId,
  };
}

/**
 * The runner's place in its group, from what the client reports: whether it consumes, the
 * partitions it holds, and the one failure that stops it for good (reported once).
 */
function trackMembership(
  deps: Pick<
    TopicRunnerDeps,
    'topic' | 'groupId' | 'metrics' | 'logger' | 'rejoinTimeoutMs' | 'onFailure' | 'onAssigned'
  >,
) {
  const { topic, groupId, metrics, logger } = deps;
  let running = false;
  let stopped = false;
  let failed = false;
  let assigned: readonly number[] = [];
  let rejoinTimer: NodeJS.Timeout | undefined;
  const fail = (failure: ConsumerFailure) => {
    running = false;
    clearTimeout(rejoinTimer);
    if (failed || stopped) return;
    failed = true;
    metrics.consumerFailures.inc({ topic, reason: failure.reason });
    deps.onFailure(failure);
  };
  const events: ConsumerEvents = {
    onAssigned(partitions) {
      assigned = [...partitions].sort((a, b) => a - b);
      clearTimeout(rejoinTimer);
      if (!failed && !stopped) running = true;
      logger.info({ partitions: assigned }, 'joined the consumer group');
      deps.onAssigned?.();
    },
    onRejoining() {
      // Not consuming until the group assigns partitions again (GROUP_JOIN).
      running = false;
      logger.info({ partitions: assigned }, 'rejoining the consumer group');
    },
    onCrash(error, restart) {
      running = false;
      if (!restart) {
        fail({ topic, groupId, reason: reasonOf(error), error, partitions: assigned });
        return;
      }
      metrics.consumerFailures.inc({ topic, reason: 'crash_restarted' });
      logger.warn(
        { err: error, partitions: assigned, rejoinTimeoutMs: deps.rejoinTimeoutMs },
        'consumer crashed; the client restarts it',
      );
      clearTimeout(rejoinTimer);
      rejoinTimer = setTimeout(
        () => fail({ topic, groupId, reason: 'group_lost', error, partitions: assigned }),
        deps.rejoinTimeoutMs,
      );
    },
    onStopped() {
      // A crash stops the client first; onCrash then says whether it comes back.
      running = false;
    },
  };
  return {
    events,
    fail,
    /** Failed or stopped: nothing more to report. */
    over: () => failed || stopped,
    stop() {
      stopped = true;
      running = false;
      clearTimeout(rejoinTimer);
    },
    isRunning: () => running,
    assignment: () => assigned,
  };
}

/** The one assigned partition whose committed offset lies inside the batch, if exactly one. */
async function positionAtBatch(
  admin: Admin,
  failure: ConsumerFailure,
  baseOffset: string,
  lastOffset: string,
): Promise<StoppedAt | undefined> {
  const positions = await positionsOf(admin, failure);
  const atBatch = positions.filter(
    (p) =>
      partitionsHolding([p], baseOffset, lastOffset).length > 0 &&
      BigInt(p.committed) >= BigInt(baseOffset),
  );
  const [here] = atBatch;
  return atBatch.length > 1 ? undefined : here;
}

const reasonOf = (error: unknown): ConsumerFailure['reason'] =>
  findUndecodable(error) ? 'undecodable_batch' : 'crash';
