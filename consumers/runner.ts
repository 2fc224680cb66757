import type { Logger } from 'pino';
import type { DeadLetterWriter, Rejection } from './dead-letter.js';
import type { BatchConsumer, KafkaBatch, KafkaClient } from './kafka/client.js';
import type { ConsumerMetrics } from './metrics.js';
import { type RetryPolicy, retryUntilDone } from './retry.js';

// One consumer group per input topic: validate and project a batch, dead-letter its rejects,
// and only then let the client commit. Redis or Kafka failures retry the whole batch with
// backoff (projection is idempotent), so nothing is committed before it is durable.

export interface BatchOutcome {
  readonly rejections: readonly Rejection[];
}

export interface Projector {
  /** Projects a batch; throws when Redis failed (the runner retries the whole batch). */
  project(batch: KafkaBatch): Promise<BatchOutcome>;
}

export interface TopicRunner {
  start(): Promise<void>;
  stop(): Promise<void>;
  isRunning(): boolean;
}

export function createTopicRunner(deps: {
  kafka: KafkaClient;
  topic: string;
  groupId: string;
  projector: Projector;
  deadLetter: DeadLetterWriter;
  metrics: ConsumerMetrics;
  logger: Logger;
  retry: RetryPolicy;
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
      });
      await consumer.start(async (batch, ctx) => {
        const end = metrics.batchDuration.startTimer({ topic });
        const outcome = await retryUntilDone(ctx, () => deps.projector.project(batch), retryDeps);
        await retryUntilDone(ctx, () => deps.deadLetter.send(outcome.rejections), retryDeps);
        for (const r of outcome.rejections) {
          metrics.rejected.inc({ topic, reason: r.reason });
          logger.warn(
            {
              partition: r.message.partition,
              offset: r.message.offset,
              reason: r.reason,
              detail: r.detail,
            },
            'message dead-lettered',
          );
        }
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
