import type { Logger } from 'pino';
import type { DeadLetterWriter, Rejection } from './dead-letter.js';
import type { BatchConsumer, KafkaBatch, KafkaClient, KafkaMessage } from './kafka/client.js';
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
  start(): Promise<void>;
  stop(): Promise<void>;
  isRunning(): boolean;
}

const MAX_DETAIL_CHARS = 300;

export function createTopicRunner(deps: {
  kafka: KafkaClient;
  topic: string;
  groupId: string;
  projector: Projector;
  deadLetter: DeadLetterWriter;
  metrics: ConsumerMetrics;
  logger: Logger;
  retry: RetryPolicy;
  /** Partition batches projected at once; the projector must allow it (default 1). */
  concurrentPartitions?: number;
}): TopicRunner {
  const { topic, metrics } = deps;
  const logger = deps.logger.child({ topic });
  let consumer: BatchConsumer | null = null;
  let running = false;
  const retryDeps = {
    logger,
    policy: deps.retry,
    onRetry: () => metrics.redisRetries.inc({ topic }),
  };

  return {
    async start() {
      consumer = deps.kafka.createConsumer({
        groupId: deps.groupId,
        topics: [topic],
        fromBeginning: true,
        ...(deps.concurrentPartitions ? { concurrentPartitions: deps.concurrentPartitions } : {}),
      });
      await consumer.start(async (batch, ctx) => {
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
        const reasons = await retryUntilDone(
          ctx,
          () => deps.deadLetter.send(rejections),
          retryDeps,
        );
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
        const last = batch.messages.at(-1);
        if (last) {
          const lag = Number(BigInt(batch.highWatermark) - BigInt(last.offset) - 1n);
          metrics.lag.set({ topic, partition: String(batch.partition) }, Math.max(0, lag));
        }
        end();
      });
      running = true;
    },
    async stop() {
      running = false;
      await consumer?.stop();
    },
    isRunning: () => running,
  };
}

function detailOf(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > MAX_DETAIL_CHARS ? `${text.slice(0, MAX_DETAIL_CHARS - 1)}…` : text;
}
