import {
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { RootSampling } from '../../src/tracing/root-sampling.js';
import type { StreamTracer } from './api-tracer.js';

// A stream's push of the event a traced write caused (docs/operations.md, "Tracing"): the
// consumers announce a write made beneath a sampled span with its traceparent
// (src/read-model/change-feed.ts); each stream of that installation re-reads and sends the
// event if its ETag changed, in a span `stream push` linked to the write's span. A span rather
// than an event on the stream's request span: that one lasts as long as the stream (hours) and
// leaves only when it ends, and an event carries no link. Its own trace, kept whenever the write
// was sampled (as a parent-based sampler follows a parent): the consumers' ratio decides which
// writes are followed, and an announcement without a traceparent costs nothing here.

/** The SDK keeps at most 128 links a span by default (OTEL_SPAN_LINK_COUNT_LIMIT). */
export const MAX_PUSH_LINKS = 128;

export function createStreamTracer(tracer: Tracer, roots: RootSampling): StreamTracer {
  return {
    push(installationId, writes) {
      const links: Link[] = [];
      for (const traceparent of writes) {
        if (links.length === MAX_PUSH_LINKS) break;
        const write = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, { traceparent }));
        if (write && (write.traceFlags & TraceFlags.SAMPLED) !== 0) links.push({ context: write });
      }
      if (links.length === 0) return null;
      const span = roots.start(
        tracer,
        'stream push',
        {
          kind: SpanKind.INTERNAL,
          root: true,
          links,
          // The stream's key could read it when the stream opened; never the key or its hash.
          attributes: { 'installation.id': installationId, 'stream.writes': writes.length },
        },
        ROOT_CONTEXT,
      );
      if (!span.isRecording()) return null;
      const active = trace.setSpan(ROOT_CONTEXT, span);
      return {
        within: (read) => context.with(active, read),
        end(outcome) {
          span.setAttribute('stream.outcome', outcome);
          if (outcome === 'failed') span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        },
      };
    },
  };
}
