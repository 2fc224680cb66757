import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ApiReader } from '../reader/api-reader.js';

// What the API tells tracing, without depending on OpenTelemetry: main.ts hands in an
// implementation (request-tracing.ts) only when tracing is on; off, buildApi adds nothing.

/** What a stream's re-read led to: an event sent, none (same ETag), `revoked`, or it failed. */
export type StreamOutcome = 'sent' | 'unchanged' | 'revoked' | 'closed' | 'failed';

/** One stream's re-read and push, in a span of its own (stream-tracing.ts). */
export interface StreamPush {
  /** Runs `read` with the push's span active: its Redis commands show beneath it. */
  within<T>(read: () => T): T;
  end(outcome: StreamOutcome): void;
}

export interface StreamTracer {
  /**
   * The span of a stream's push that announcements of sampled writes caused, linked to each
   * write's span (`writes`: their traceparents); null when none of them is valid and sampled.
   */
  push(installationId: number, writes: readonly string[]): StreamPush | null;
}

/** The ids of a sampled request's span, for an exemplar. */
export interface SampledSpan {
  readonly traceId: string;
  readonly spanId: string;
}

export interface ApiTracer {
  /** Adds the request spans to the app; called before any route is declared. */
  register(app: FastifyInstance): void;
  /** The reader, noting on the request's span whether a read came from the near-cache. */
  reader(reader: ApiReader, nearCache: boolean): ApiReader;
  /** The request's span when it was sampled, else undefined (the latency's exemplar). */
  sampledSpan(request: FastifyRequest): SampledSpan | undefined;
  /** The streams' pushes caused by traced writes. */
  readonly streams: StreamTracer;
}
