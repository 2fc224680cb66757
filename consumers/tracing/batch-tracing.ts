import {
  context,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  TraceFlags,
  trace,
} from '@opentelemetry/api';
import type { PhaseCounts } from '../../src/tracing/pass-trace.js';
import { type RootSampling, sdkDecides } from '../../src/tracing/root-sampling.js';
import type { KafkaBatch, KafkaMessage } from '../kafka/client.js';
import type { BatchTracer } from './batch-tracer.js';

// The consumers' spans (docs/operations.md, "Tracing"): one per batch, linked to the span that
// produced each of its messages (W3C traceparent header), with the projection passes beneath
// and, on the telemetry path, their load, fold and write. Loaded only when tracing is on. A batch
// is drawn first (root-sampling.ts): one not kept costs a Math.random() and nothing else.

/** The SDK keeps at most 128 links a span by default (OTEL_SPAN_LINK_COUNT_LIMIT). */
const MAX_LINKS = 128;

const headerGetter: TextMapGetter<KafkaMessage['headers']> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key]?.toString('latin1'),
};

/** `roots`: the process's draw (TracingRuntime); by default the SDK's sampler decides alone. */
export function createBatchTracer(roots: RootSampling = sdkDecides): BatchTracer {
  const tracer = trace.getTracer('read-model-consumers');
  return {
    batch(batch, handle) {
      // Not kept: the batch runs with no span active, so nothing beneath it is traced either
      // (passes, phases, Redis commands), no header is read and no attribute built.
      if (!roots.keep()) return handle();
      const span = roots.start(
        tracer,
        `process ${batch.topic}`,
        { kind: SpanKind.CONSUMER, root: true, attributes: batchAttributes(batch) },
        context.active(),
      );
      if (!span.isRecording()) return handle();
      span.addLinks(producerLinks(batch.messages));
      return context.with(trace.setSpan(context.active(), span), () => ended(span, handle()));
    },
    pass: (batch, run) =>
      traced()
        ? tracer.startActiveSpan(
            'projection pass',
            { attributes: { 'messaging.batch.message_count': batch.messages.length } },
            (span) => ended(span, run()),
          )
        : run(),
    deadLettered: (message, reason) =>
      trace.getActiveSpan()?.addEvent('dead_letter', {
        'ingest.reason': reason,
        'messaging.destination.partition.id': String(message.partition),
        'messaging.kafka.offset': Number(message.offset),
      }),
    retried: (error) =>
      trace.getActiveSpan()?.addEvent('retry', {
        'error.type': error instanceof Error ? error.name : typeof error,
      }),
    traceparent,
    sampledSpan,
    phases: {
      traceparent,
      phase: (name, run) =>
        traced()
          ? tracer.startActiveSpan(name, (span) =>
              ended(
                span,
                run((counts) => span.setAttributes(prefixed(counts()))),
              ),
            )
          : run(ignore),
    },
    headers() {
      const carrier: Record<string, string> = {};
      propagation.inject(context.active(), carrier);
      return carrier.traceparent === undefined ? undefined : carrier;
    },
  };
}

/**
 * The active span's W3C traceparent when it is sampled: what a write beneath it announces with
 * its change. None is active beneath a batch the draw did not keep.
 */
function traceparent(): string | undefined {
  const active = sampledSpan();
  return active === undefined ? undefined : `00-${active.traceId}-${active.spanId}-01`;
}

/** The active span's context when it is sampled (the SDK's own object: nothing built). */
function sampledSpan() {
  const active = trace.getActiveSpan()?.spanContext();
  return active === undefined || (active.traceFlags & TraceFlags.SAMPLED) === 0
    ? undefined
    : active;
}

/** Whether a sampled batch's span is active: passes and phases are traced only beneath one. */
const traced = () => trace.getActiveSpan()?.isRecording() === true;

const ignore = () => {};

function batchAttributes(batch: KafkaBatch) {
  const first = batch.messages[0];
  const last = batch.messages[batch.messages.length - 1];
  return {
    'messaging.system': 'kafka',
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'process',
    'messaging.destination.name': batch.topic,
    'messaging.destination.partition.id': String(batch.partition),
    'messaging.batch.message_count': batch.messages.length,
    ...(first && last
      ? { 'ingest.first_offset': Number(first.offset), 'ingest.last_offset': Number(last.offset) }
      : {}),
  };
}

/** A link to each message's producer span, for messages that carry a valid traceparent. */
function producerLinks(messages: readonly KafkaMessage[]): Link[] {
  const links: Link[] = [];
  for (const message of messages) {
    if (links.length === MAX_LINKS) break;
    if (message.headers.traceparent === undefined) continue;
    const producer = trace.getSpanContext(
      propagation.extract(ROOT_CONTEXT, message.headers, headerGetter),
    );
    if (producer) links.push({ context: producer });
  }
  return links;
}

function prefixed(counts: PhaseCounts): Record<string, number | number[]> {
  const out: Record<string, number | number[]> = {};
  for (const [name, value] of Object.entries(counts)) out[`ingest.${name}`] = value;
  return out;
}

async function ended<T>(span: Span, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    // The error's type only: a message may quote the event (an access change names a key hash).
    const type = error instanceof Error ? error.name : typeof error;
    span.setAttribute('error.type', type);
    span.setStatus({ code: SpanStatusCode.ERROR, message: type });
    throw error;
  } finally {
    span.end();
  }
}
