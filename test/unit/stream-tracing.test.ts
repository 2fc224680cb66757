import { randomBytes } from 'node:crypto';
import { SpanKind, trace } from '@opentelemetry/api';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createApiTracer } from '../../api/tracing/request-tracing.js';
import { MAX_PUSH_LINKS } from '../../api/tracing/stream-tracing.js';
import { type InMemoryTracing, startInMemoryTracing } from '../support/in-memory-tracing.js';

// A stream's push after announcements of traced writes, with the SDK's in-memory exporter: one
// span, a trace of its own, linked to each sampled write's span, the re-read inside it, its
// outcome; nothing for announcements whose write was not sampled or whose context is not one.

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const write = (flags = '01') => {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-${flags}` };
};

describe('stream push spans', () => {
  let tracing: InMemoryTracing;
  beforeAll(() => {
    tracing = startInMemoryTracing();
  });
  afterAll(() => tracing.stop());
  beforeEach(() => {
    tracing.reset();
    tracing.sampled = true;
  });

  it('spans a push linked to every sampled write that caused it, the re-read inside it', async () => {
    const streams = createApiTracer().streams;
    const [a, b] = [write(), write()];
    const push = streams.push(4401, [a.traceparent, b.traceparent]);
    expect(push).not.toBeNull();
    const activeInRead = await push?.within(async () => trace.getActiveSpan()?.spanContext());
    push?.end('sent');

    const [span, ...others] = tracing.spans();
    expect(others).toEqual([]);
    expect(span?.name).toBe('stream push');
    expect(span?.kind).toBe(SpanKind.INTERNAL);
    // A trace of its own: the writes are linked, not parents.
    expect(span?.parentSpanContext).toBeUndefined();
    expect(span?.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([
      [a.traceId, a.spanId],
      [b.traceId, b.spanId],
    ]);
    expect(span?.attributes).toEqual({
      'installation.id': 4401,
      'stream.writes': 2,
      'stream.outcome': 'sent',
    });
    expect(activeInRead?.spanId).toBe(span?.spanContext().spanId);
    expect(span?.status.code).toBe(0);
  });

  it('marks a push whose re-read failed', () => {
    const push = createApiTracer().streams.push(1, [write().traceparent]);
    push?.end('failed');
    const [span] = tracing.spans();
    expect(span?.attributes['stream.outcome']).toBe('failed');
    expect(span?.status.code).toBe(2);
  });

  it('links only sampled, valid contexts, at most as many as a span keeps', () => {
    const streams = createApiTracer().streams;
    expect(streams.push(1, [write('00').traceparent, 'not a traceparent', '00-0-0-01'])).toBeNull();
    const many = Array.from({ length: MAX_PUSH_LINKS + 5 }, () => write().traceparent);
    streams.push(1, [write('00').traceparent, ...many])?.end('unchanged');
    const [span] = tracing.spans();
    expect(span?.links).toHaveLength(MAX_PUSH_LINKS);
    expect(span?.links[0]?.context.traceId).toBe(many[0]?.slice(3, 35));
  });

  it('records nothing when the sampler keeps nothing', () => {
    tracing.sampled = false;
    expect(createApiTracer().streams.push(1, [write().traceparent])).toBeNull();
    expect(tracing.spans()).toEqual([]);
  });
});
