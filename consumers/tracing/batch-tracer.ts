import type { RejectReason } from '../../src/domain/dead-letter.js';
import type { PassTrace } from '../../src/tracing/pass-trace.js';
import type { KafkaBatch, KafkaMessage } from '../kafka/client.js';

// What the consumers tell tracing, without depending on OpenTelemetry: main.ts hands in an
// implementation (batch-tracing.ts) only when tracing is on; off, nothing here is called.

export interface BatchTracer {
  /** Handles one batch inside its span, linked to the producer's span of each message. */
  batch(batch: KafkaBatch, handle: () => Promise<void>): Promise<void>;
  /** One projection pass over (part of) the batch, beneath the batch's span. */
  pass<T>(batch: KafkaBatch, run: () => Promise<T>): Promise<T>;
  /** A message of the batch in hand went to the dead-letter topic, for this reason. */
  deadLettered(message: KafkaMessage, reason: RejectReason): void;
  /** An attempt at the batch failed and is retried. */
  retried(error: unknown): void;
  /** Load, fold and write of the telemetry write path, beneath the pass. */
  readonly phases: PassTrace;
  /**
   * The active span's W3C traceparent when it is sampled, else undefined: the installation and
   * access writes announce it with their change (src/read-model/change-feed.ts).
   */
  traceparent(): string | undefined;
  /** The active span's trace and span id when it is sampled: the batch duration's exemplar. */
  sampledSpan(): { traceId: string; spanId: string } | undefined;
  /** The W3C trace context (traceparent) of the active span, for a message this process sends. */
  headers(): Readonly<Record<string, string>> | undefined;
}
