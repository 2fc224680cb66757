import type { Logger } from 'pino';
import type { DeadLetterWriter, Rejection } from './dead-letter.js';
import type { BatchContext, BatchHandler, KafkaBatch, KafkaMessage } from './kafka/client.js';
import type { ConsumerMetrics } from './metrics.js';
import type { Projector } from './projector.js';
import { isRetriable } from './retriable.js';
import { type RetryPolicy, retryUntilDone } from './retry.js';
import type { BatchTracer } from './tracing/batch-tracer.js';

// What a topic runner does with one batch: project it, dead-letter its rejects, record it; it
// resolves only then, so the client commits nothing before it is durable. Retriable failures
// (Redis or Kafka unreachable, contention) retry the whole batch with backoff (projection is
// idempotent). Any other failure belongs to the batch's content: the batch is bisected until
// the one message that causes it is found and dead-lettered as processing_error. Unless every
// message of the batch fails alike: then no message is at fault (a script error, a size limit
// of the store), nothing is dead-lettered, and the batch is retried with backoff while the
// process says so (an error log, `ingest_systemic_failures_total`, not ready) until it passes.

export interface BatchHandlerDeps {
  readonly topic: string;
  readonly projector: Projector;
  readonly deadLetter: DeadLetterWriter;
  readonly metrics: ConsumerMetrics;
  readonly logger: Logger;
  readonly retry: RetryPolicy;
  /** See createTopicRunner: throws (retriable) when the read model lost its data. */
  readonly beforeDeadLetter?: () => Promise<void>;
  /** Spans of batches and passes; absent, tracing is off and nothing of it runs. */
  readonly tracer?: BatchTracer;
}

type RetryDeps = Parameters<typeof retryUntilDone>[2];

const MAX_DETAIL_CHARS = 300;

export function createBatchHandler(deps: BatchHandlerDeps): BatchHandler {
  const { topic, metrics, tracer } = deps;
  const retryDeps: RetryDeps = {
    logger: deps.logger,
    policy: deps.retry,
    onRetry: (error) => {
      metrics.redisRetries.inc({ topic });
      tracer?.retried(error);
    },
  };
  // The failure every message of a batch of this topic last failed with: the same failure of a
  // whole batch is known at once, without bisecting it again.
  let systemic: string | null = null;
  const isolate = async (batch: KafkaBatch, ctx: BatchContext): Promise<Rejection[]> => {
    const rejections = await projectIsolating(
      deps,
      retryDeps,
      batch,
      ctx,
      batch.messages,
      systemic,
    );
    const detail = sameFailure(batch.messages.length, rejections);
    if (detail !== null) {
      systemic = detail;
      throw new SystemicFailure(detail);
    }
    if (systemic !== null) {
      metrics.systemicFailure.set({ topic }, 0);
      metrics.failingAlike.delete(topic);
    }
    systemic = null;
    return rejections;
  };
  const systemicRetry: RetryDeps = {
    ...retryDeps,
    onRetry: (error) => {
      if (!(error instanceof SystemicFailure)) return retryDeps.onRetry?.(error);
      tracer?.retried(error);
      metrics.systemicFailures.inc({ topic });
      metrics.systemicFailure.set({ topic }, 1);
      metrics.failingAlike.add(topic);
      deps.logger.error(
        { detail: error.message },
        'every message of the batch fails alike: not their fault, nothing dead-lettered; retrying',
      );
    },
  };
  const handle: BatchHandler = async (batch, ctx) => {
    // Its second argument, the exemplar's labels, is read when tracing enabled exemplars
    // (metrics.ts); prom-client's types tie those labels to the histogram's own names.
    const end = metrics.batchDuration.startTimer({ topic }) as (
      labels?: undefined,
      exemplar?: { trace_id: string; span_id: string },
    ) => number;
    const rejections = await retryUntilDone(ctx, () => isolate(batch, ctx), systemicRetry);
    const guard = deps.beforeDeadLetter;
    if (rejections.length > 0 && guard) await retryUntilDone(ctx, guard, retryDeps);
    const reasons = await retryUntilDone(ctx, () => deps.deadLetter.send(rejections), retryDeps);
    recordProjected(deps, batch);
    logRejections(deps, rejections, reasons);
    // A sampled batch's span (active here) is its duration's exemplar; off, no tracer, no work.
    const span = tracer?.sampledSpan();
    if (span === undefined) end();
    else end(undefined, { trace_id: span.traceId, span_id: span.spanId });
  };
  return tracer ? (batch, ctx) => tracer.batch(batch, () => handle(batch, ctx)) : handle;
}

// kafkajs heartbeats between fetches only; a large batch on a slow Redis can outlast the
// (short) session timeout, so the group would evict a healthy member mid-batch and it
// would replay that batch again and again. kafkajs sends at most one per interval.
export function withHeartbeats(handle: BatchHandler): BatchHandler {
  return async (batch, ctx) => {
    const beat = setInterval(() => void ctx.heartbeat().catch(() => undefined), 1_000);
    try {
      await handle(batch, ctx);
    } finally {
      clearInterval(beat);
    }
  };
}

/** Thrown (retriable) while every message of a batch fails alike; its message is the failure. */
export class SystemicFailure extends Error {
  readonly retriable = true;
}

/**
 * The one detail every message of the batch was refused for, when they are messages of several
 * keys (events of one installation may all share its corrupt state); else null.
 */
function sameFailure(count: number, rejections: readonly Rejection[]): string | null {
  if (count < 2 || rejections.length !== count) return null;
  const [first] = rejections;
  if (first?.reason !== 'processing_error' || first.detail === undefined) return null;
  const keys = new Set<string>();
  for (const r of rejections) {
    if (r.reason !== 'processing_error' || r.detail !== first.detail) return null;
    keys.add(r.message.key?.toString('latin1') ?? '');
  }
  return keys.size > 1 ? first.detail : null;
}

/** Projects the messages; on a failure of their content, each half apart until one is left. */
async function projectIsolating(
  deps: BatchHandlerDeps,
  retryDeps: RetryDeps,
  batch: KafkaBatch,
  ctx: BatchContext,
  messages: readonly KafkaMessage[],
  /** A failure known to be no message's: the whole batch failing with it is not bisected. */
  systemic: string | null = null,
): Promise<Rejection[]> {
  const part = { ...batch, messages };
  const { projector, tracer } = deps;
  const project = tracer
    ? () => tracer.pass(part, () => projector.project(part))
    : () => projector.project(part);
  try {
    const outcome = await retryUntilDone(ctx, project, retryDeps);
    return [...outcome.rejections];
  } catch (error) {
    if (isRetriable(error)) throw error;
    if (systemic !== null && detailOf(error) === systemic) throw new SystemicFailure(systemic);
    const [only] = messages;
    if (messages.length === 1 && only) {
      return [{ message: only, reason: 'processing_error', detail: detailOf(error) }];
    }
    deps.logger.warn(
      { err: error, partition: batch.partition, messages: messages.length },
      'batch failed on its content; isolating the message that causes it',
    );
    const half = Math.ceil(messages.length / 2);
    return [
      ...(await projectIsolating(deps, retryDeps, batch, ctx, messages.slice(0, half))),
      ...(await projectIsolating(deps, retryDeps, batch, ctx, messages.slice(half))),
    ];
  }
}

/** The batch's delay to visible, and its newest timestamp for the event-age gauge. */
function recordProjected({ topic, metrics }: BatchHandlerDeps, batch: KafkaBatch): void {
  const at = `${topic}|${batch.partition}`;
  // One pass: each timestamp is converted from kafkajs' string when read.
  let newest = 0;
  let oldest = Number.POSITIVE_INFINITY;
  for (const m of batch.messages) {
    const ts = m.timestampMs;
    if (ts > newest) newest = ts;
    if (ts < oldest) oldest = ts;
  }
  // Once per batch, not per event: the batch's worst delay bounds every event's in it.
  if (batch.messages.length > 0)
    metrics.visibleDelay.observe({ topic }, Math.max(0, (Date.now() - oldest) / 1000));
  if (newest > (metrics.newestProjected.get(at) ?? 0)) metrics.newestProjected.set(at, newest);
}

/** `reasons` are the dead-letter writer's, by index; a rejection's own where it has none. */
function logRejections(
  { topic, metrics, logger, tracer }: BatchHandlerDeps,
  rejections: readonly Rejection[],
  reasons: readonly Rejection['reason'][],
): void {
  rejections.forEach((r, i) => {
    const reason = reasons[i] ?? r.reason;
    metrics.rejected.inc({ topic, reason });
    tracer?.deadLettered(r.message, reason);
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
}

function detailOf(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.length > MAX_DETAIL_CHARS ? `${text.slice(0, MAX_DETAIL_CHARS - 1)}…` : text;
}
