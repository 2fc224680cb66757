import { randomBytes } from 'node:crypto';
import { SpanKind } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createBatchHandler } from '../../consumers/batch-handler.js';
import type { KafkaBatch, KafkaMessage } from '../../consumers/kafka/client.js';
import { createConsumerMetrics } from '../../consumers/metrics.js';
import type { Projector } from '../../consumers/projector.js';
import { createBatchTracer } from '../../consumers/tracing/batch-tracing.js';
import { openMetricsText } from '../../src/ops/open-metrics.js';
import { type InMemoryTracing, startInMemoryTracing } from '../support/in-memory-tracing.js';
import { parseOpenMetrics } from '../support/open-metrics-parser.js';

// The consumers' spans, with the SDK's in-memory exporter: one per batch linked to the producer
// of each message (its traceparent header), a pass beneath it, dead letters as events with their
// reason, the batch's context on what the consumers send (dead letters) and on the writes'
// change announcements, and nothing at all for a batch the sampler dropped.

const TOPIC = 'device-telemetry.v1';
const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/** A producer's span context, as its traceparent header carries it. */
function producerContext() {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, header: Buffer.from(`00-${traceId}-${spanId}-01`) };
}

const message = (offset: number, traceparent?: Buffer): KafkaMessage => ({
  topic: TOPIC,
  partition: 2,
  offset: String(offset),
  key: Buffer.from('42'),
  value: Buffer.from('{}'),
  headers: traceparent ? { traceparent } : {},
  timestampMs: Date.now(),
});

const batchOf = (messages: KafkaMessage[]): KafkaBatch => ({
  topic: TOPIC,
  partition: 2,
  messages,
  highWatermark: String(messages.length),
});

const ctx = { heartbeat: async () => {}, isStale: () => false };

function harness(project: Projector['project']) {
  const tracer = createBatchTracer();
  const sentWith: Array<Readonly<Record<string, string>> | undefined> = [];
  const handle = createBatchHandler({
    topic: TOPIC,
    projector: { project },
    deadLetter: {
      async send(rejections) {
        // What the producer would add to every dead letter of this send.
        if (rejections.length > 0) sentWith.push(tracer.headers());
        return rejections.map((r) => r.reason);
      },
    },
    metrics: createConsumerMetrics(),
    logger: pino({ level: 'silent' }),
    retry: { initialDelayMs: 1, maxDelayMs: 2 },
    tracer,
  });
  return { handle, sentWith };
}

const named = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);

describe('consumer batch spans', () => {
  let tracing: InMemoryTracing;
  beforeAll(() => {
    tracing = startInMemoryTracing();
  });
  afterAll(() => tracing.stop());
  beforeEach(() => {
    tracing.reset();
    tracing.sampled = true;
  });

  it('spans a batch, linked to the producer of each message, with its pass and dead letters', async () => {
    const [a, b] = [producerContext(), producerContext()];
    const messages = [message(10, a.header), message(11), message(12, b.header)];
    const { handle, sentWith } = harness(async (batch) => ({
      rejections: [
        { message: batch.messages[1] as KafkaMessage, reason: 'schema_violation', detail: 'x' },
      ],
    }));

    await handle(batchOf(messages), ctx);

    const spans = tracing.spans();
    const [batchSpan] = named(spans, `process ${TOPIC}`);
    expect(batchSpan?.kind).toBe(SpanKind.CONSUMER);
    expect(batchSpan?.attributes).toMatchObject({
      'messaging.system': 'kafka',
      'messaging.destination.name': TOPIC,
      'messaging.destination.partition.id': '2',
      'messaging.batch.message_count': 3,
      'ingest.first_offset': 10,
      'ingest.last_offset': 12,
    });
    // A link per message that carries a producer's context; the one without has none.
    expect(batchSpan?.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([
      [a.traceId, a.spanId],
      [b.traceId, b.spanId],
    ]);
    // A batch is a trace of its own: the producers are linked, not parents.
    expect(batchSpan?.parentSpanContext).toBeUndefined();

    const [pass] = named(spans, 'projection pass');
    expect(pass?.parentSpanContext?.spanId).toBe(batchSpan?.spanContext().spanId);
    expect(pass?.attributes['messaging.batch.message_count']).toBe(3);

    const deadLetters = batchSpan?.events.filter((e) => e.name === 'dead_letter') ?? [];
    expect(deadLetters.map((e) => e.attributes)).toEqual([
      {
        'ingest.reason': 'schema_violation',
        'messaging.destination.partition.id': '2',
        'messaging.kafka.offset': 11,
      },
    ]);

    // The dead letters carry the batch's own context: a replay links back to this batch.
    const { traceId, spanId } = batchSpan?.spanContext() ?? {};
    expect(sentWith).toEqual([{ traceparent: `00-${traceId}-${spanId}-01` }]);
  });

  it('marks a pass that failed and the retry it caused', async () => {
    let attempts = 0;
    const { handle } = harness(async () => {
      if (++attempts === 1)
        throw Object.assign(new Error('Connection is closed.'), { retriable: true });
      return { rejections: [] };
    });

    await handle(batchOf([message(1)]), ctx);

    const spans = tracing.spans();
    const passes = named(spans, 'projection pass');
    expect(passes.map((p) => p.status.code)).toEqual([2, 0]);
    expect(passes[0]?.attributes['error.type']).toBe('Error');
    const [batchSpan] = named(spans, `process ${TOPIC}`);
    expect(batchSpan?.events.map((e) => e.name)).toEqual(['retry']);
  });

  it('gives a write the traceparent of the sampled phase it runs in, and none outside a sampled batch', async () => {
    const tracer = createBatchTracer();
    const seen: Array<string | undefined> = [];
    const batch = batchOf([message(1)]);
    const project = () =>
      tracer.pass(batch, () =>
        tracer.phases.phase('write', async () => {
          seen.push(tracer.phases.traceparent(), tracer.traceparent());
        }),
      );

    await tracer.batch(batch, project);
    const [write] = named(tracing.spans(), 'write');
    const { traceId, spanId } = write?.spanContext() ?? {};
    expect(seen).toEqual([`00-${traceId}-${spanId}-01`, `00-${traceId}-${spanId}-01`]);

    seen.length = 0;
    tracing.sampled = false;
    await tracer.batch(batch, project);
    expect(seen).toEqual([undefined, undefined]);
    // Outside any batch (the access worker's chunks, the flow sweep): none either.
    expect(tracer.traceparent()).toBeUndefined();
  });

  it("keeps a sampled batch's span as its duration's exemplar, written only as OpenMetrics", async () => {
    const metrics = createConsumerMetrics({ exemplars: true });
    const plain = createConsumerMetrics();
    const tracer = createBatchTracer();
    const handle = createBatchHandler({
      topic: TOPIC,
      projector: { project: async () => ({ rejections: [] }) },
      deadLetter: { send: async () => [] },
      metrics,
      logger: pino({ level: 'silent' }),
      retry: { initialDelayMs: 1, maxDelayMs: 2 },
      tracer,
    });

    await handle(batchOf([message(1)]), ctx);
    tracing.sampled = false;
    await handle(batchOf([message(2)]), ctx);

    const [batchSpan, ...others] = named(tracing.spans(), `process ${TOPIC}`);
    expect(others).toEqual([]);
    const families = parseOpenMetrics(await openMetricsText(metrics.registry));
    const duration = families.find((f) => f.name === 'ingest_batch_duration_seconds');
    const exemplars = duration?.samples.flatMap((s) => (s.exemplar ? [s.exemplar] : []));
    expect(exemplars?.map((e) => e.labels)).toEqual([
      { trace_id: batchSpan?.spanContext().traceId, span_id: batchSpan?.spanContext().spanId },
    ]);
    expect(duration?.samples.find((s) => s.name.endsWith('_count'))?.value).toBe(2);

    // The text format: as the plain histogram writes the same observations, no exemplar, an
    // OpenMetrics scrape between.
    const traced = createConsumerMetrics({ exemplars: true });
    const labels = { topic: TOPIC };
    traced.batchDuration.observe({
      labels,
      value: 0.02,
      // prom-client's types tie an exemplar's labels to the histogram's own names.
      exemplarLabels: {
        trace_id: 'a'.repeat(32),
        span_id: 'b'.repeat(16),
      } as unknown as typeof labels,
    });
    plain.batchDuration.observe(labels, 0.02);
    expect(await openMetricsText(traced.registry)).toContain('trace_id="aaaa');
    expect(await traced.registry.metrics()).toBe(await plain.registry.metrics());
  });

  it('records nothing and reads no header for a batch the sampler drops', async () => {
    tracing.sampled = false;
    let headersRead = 0;
    const traced = message(1, producerContext().header);
    const watched = {
      ...traced,
      get headers() {
        headersRead++;
        return traced.headers;
      },
    };
    let projected = 0;
    const { handle, sentWith } = harness(async (batch) => {
      projected++;
      return {
        rejections: [
          { message: batch.messages[0] as KafkaMessage, reason: 'invalid_json', detail: 'x' },
        ],
      };
    });

    await handle(batchOf([watched]), ctx);

    expect(projected).toBe(1);
    expect(tracing.spans()).toEqual([]);
    expect(headersRead).toBe(0);
    // No context of its own to give: a dead letter keeps the one its producer sent.
    expect(sentWith).toEqual([undefined]);
  });
});
