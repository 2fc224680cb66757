import type { Logger } from 'pino';
import type { DeadLetterWriter, Rejection } from './dead-letter.js';
import type {
  Admin,
  BatchConsumer,
  BatchContext,
  KafkaBatch,
  KafkaClient,
  KafkaMessage,
} from './kafka/client.js';
import { onUndecodableBatch, type UndecodableBatchError } from './kafka/codecs.js';
import {
  type ConsumerFailure,
  findUndecodable,
  partitionsHolding,
  positionsOf,
} from './liveness.js';
import type { ConsumerMetrics } from './metrics.js';
import { isRetriable } from './retriable.js';
import { type RetryPolicy, retryUntilDone } from './retry.js';

// One consumer group per input topic: validate and project a batch, dead-letter its rejects,
// and only then let the client commit. Retriable failures (Redis or Kafka unreachable,
// contention) retry the whole batch with backoff (projection is idempotent), so nothing is
// committed before it is durable. Any other failure belongs to the batch's content: the batch is
// bisected until the one message that causes it is found and dead-lettered as processing_error.

export interface BatchOutcome {
  readonly rejections: readonly Rejection[];
}

export interface Projector {
  /** Projects a batch; throws when it failed (the runner retries or isolates the culprit). */
  project(batch: KafkaBatch): Promise<BatchOutcome>;
}

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

const MAX_DETAIL_CHARS = 300;

export function createTopicRunner(deps: {
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
}): TopicRunner {
  const { topic, metrics, groupId } = deps;
  const logger = deps.logger.child({ topic, groupId });
  let consumer: BatchConsumer | null = null;
  let running = false;
  let stopped = false;
  let failed = false;
  let assigned: readonly number[] = [];
  let rejoinTimer: NodeJS.Timeout | undefined;
  let stopListening = () => {};
  let locating = false;
  // A failed decode names offsets, not a topic: the partition of this topic whose committed
  // offset lies inside the batch is the one stopped at it. Checked again on each refetch,
  // since the records before the batch may still be in projection.
  const locate = async (error: UndecodableBatchError) => {
    if (locating || failed || stopped || error.baseOffset === null || error.lastOffset === null)
      return;
    locating = true;
    try {
      const positions = await positionsOf(deps.admin, {
        topic,
        groupId,
        reason: 'undecodable_batch',
        error,
        partitions: assigned,
      });
      const atBatch = positions.filter(
        (p) =>
          partitionsHolding([p], error.baseOffset as string, error.lastOffset as string).length >
            0 && BigInt(p.committed) >= BigInt(error.baseOffset as string),
      );
      const [here] = atBatch;
      if (!here || atBatch.length > 1) return;
      consumer?.pause(topic, here.partition);
      fail({
        topic,
        groupId,
        reason: 'undecodable_batch',
        error,
        partitions: assigned,
        at: { partition: here.partition, offset: here.committed },
      });
    } catch (lookup) {
      logger.warn({ err: lookup }, 'could not read group offsets to place an undecodable batch');
    } finally {
      locating = false;
    }
  };
  const fail = (failure: ConsumerFailure) => {
    running = false;
    clearTimeout(rejoinTimer);
    if (failed || stopped) return;
    failed = true;
    metrics.consumerFailures.inc({ topic, reason: failure.reason });
    deps.onFailure(failure);
  };
  const retryDeps = {
    logger,
    policy: deps.retry,
    onRetry: () => metrics.redisRetries.inc({ topic }),
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
        events: {
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
        },
      });
      // kafkajs heartbeats between fetches only; a large batch on a slow Redis can outlast the
      // (short) session timeout, so the group would evict a healthy member mid-batch and it
      // would replay that batch again and again. kafkajs sends at most one per interval.
      const handle = async (batch: KafkaBatch, ctx: BatchContext) => {
        const end = metrics.batchDuration.startTimer({ topic });
        const project = async (messages: readonly KafkaMessage[]): Promise<Rejection[]> => {
          try {
            const outcome = await retryUntilDone(
              ctx,
              () => deps.projector.project({ ...batch, messages }),
              retryDeps,
            );
            return [...outcome.rejections];
          } catch (error) {
            if (isRetriable(error)) throw error;
            const [only] = messages;
            if (messages.length === 1 && only) {
              return [{ message: only, reason: 'processing_error', detail: detailOf(error) }];
            }
            logger.warn(
              { err: error, partition: batch.partition, messages: messages.length },
              'batch failed on its content; isolating the message that causes it',
            );
            const half = Math.ceil(messages.length / 2);
            return [
              ...(await project(messages.slice(0, half))),
              ...(await project(messages.slice(half))),
            ];
          }
        };
        const rejections = await project(batch.messages);
        const guard = deps.beforeDeadLetter;
        if (rejections.length > 0 && guard) await retryUntilDone(ctx, guard, retryDeps);
        const reasons = await retryUntilDone(
          ctx,
          () => deps.deadLetter.send(rejections),
          retryDeps,
        );
        const at = `${topic}|${batch.partition}`;
        const newest = batch.messages.reduce((n, m) => Math.max(n, m.timestampMs), 0);
        const oldest = batch.messages.reduce((o, m) => Math.min(o, m.timestampMs), newest);
        // Once per batch, not per event: the batch's worst delay bounds every event's in it.
        if (batch.messages.length > 0)
          metrics.visibleDelay.observe({ topic }, Math.max(0, (Date.now() - oldest) / 1000));
        if (newest > (metrics.newestProjected.get(at) ?? 0))
          metrics.newestProjected.set(at, newest);
        rejections.forEach((r, i) => {
          const reason = reasons[i] ?? r.reason;
          metrics.rejected.inc({ topic, reason });
          logger.warn(
            {
              partition: r.message.partition,
              offset: r.message.offset,
              reason,
              detail: r.detail,
            },
            'message dead-lettered',
          );
        });
        end();
      };
      await consumer.start(async (batch, ctx) => {
        const beat = setInterval(() => void ctx.heartbeat().catch(() => undefined), 1_000);
        try {
          await handle(batch, ctx);
        } finally {
          clearInterval(beat);
        }
      });
    },
    async stop() {
      stopped = true;
      stopListening();
      running = false;
      clearTimeout(rejoinTimer);
      await consumer?.stop();
    },
    isRunning: () => running,
    assignment: () => assigned,
    topic,
    groupId,
  };
}

const reasonOf = (error: unknown): ConsumerFailure['reason'] =>
  findUndecodable(error) ? 'undecodable_batch' : 'crash';

function detailOf(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > MAX_DETAIL_CHARS ? `${text.slice(0, MAX_DETAIL_CHARS - 1)}…` : text;
}
