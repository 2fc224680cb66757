import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  InMemorySpanExporter,
  type ReadableSpan,
  type Sampler,
  SamplingDecision,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';

// The OpenTelemetry SDK in the test's own process, its spans kept in memory: the global tracer
// provider, the AsyncLocalStorage context and the W3C propagator, as the SDK sets them up in
// the processes. One per test file; `sampled` switches the sampler between keeping every trace
// and keeping none.

export interface InMemoryTracing {
  spans(): ReadableSpan[];
  /** Whether new root spans are sampled (default true). */
  sampled: boolean;
  reset(): void;
  stop(): Promise<void>;
}

export function startInMemoryTracing(): InMemoryTracing {
  const exporter = new InMemorySpanExporter();
  const state = { sampled: true };
  const sampler: Sampler = {
    shouldSample: () => ({
      decision: state.sampled ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD,
    }),
    toString: () => 'switchable',
  };
  const provider = new TracerProvider({
    sampler,
    spanProcessors: [new SimpleSpanProcessor({ exporter })],
  });
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  return {
    spans: () => exporter.getFinishedSpans(),
    get sampled() {
      return state.sampled;
    },
    set sampled(value: boolean) {
      state.sampled = value;
    },
    reset: () => exporter.reset(),
    async stop() {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** Every attribute value of every span, its events and links, as text: for secret scans. */
export function allAttributeText(spans: readonly ReadableSpan[]): string {
  const values: unknown[] = [];
  for (const span of spans) {
    values.push(span.name, ...Object.values(span.attributes));
    for (const event of span.events)
      values.push(event.name, ...Object.values(event.attributes ?? {}));
    for (const link of span.links) values.push(...Object.values(link.attributes ?? {}));
  }
  return values.map((v) => String(v)).join('\n');
}
