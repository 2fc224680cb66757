import { ROOT_CONTEXT, SpanKind, TraceFlags, trace } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { rootSampling } from '../../src/tracing/root-sampling.js';
import { type TraceSampling, tracingSettings } from '../../src/tracing/tracing-settings.js';

// New traces are drawn before their root span exists (src/tracing/root-sampling.ts); the SDK's
// sampler then keeps exactly the roots started through the draw, and spans with a parent decide
// as OTEL_TRACES_SAMPLER says.

const sampling = (env: Record<string, string>) => tracingSettings(env, 'x').sampling;

function tracerWith(settings: TraceSampling) {
  const { roots, sampler } = rootSampling(settings);
  const provider = new TracerProvider({
    sampler,
    spanProcessors: [new SimpleSpanProcessor({ exporter: new InMemorySpanExporter() })],
  });
  return { roots, tracer: provider.getTracer('test') };
}

const remoteParent = (sampled: boolean) =>
  trace.setSpanContext(ROOT_CONTEXT, {
    traceId: '0af7651916cd43dd8448eb211c80319c',
    spanId: 'b7ad6b7169203331',
    traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE,
    isRemote: true,
  });

describe('root sampling', () => {
  it('reads OTEL_TRACES_SAMPLER as the SDK does', () => {
    expect(sampling({})).toEqual({ ratio: 1, parentBased: true });
    expect(
      sampling({
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.01',
      }),
    ).toEqual({ ratio: 0.01, parentBased: true });
    expect(sampling({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' })).toEqual(
      { ratio: 1, parentBased: false },
    );
    expect(sampling({ OTEL_TRACES_SAMPLER: 'always_off' })).toEqual({
      ratio: 0,
      parentBased: false,
    });
    expect(sampling({ OTEL_TRACES_SAMPLER: 'parentbased_always_off' })).toEqual({
      ratio: 0,
      parentBased: true,
    });
    expect(sampling({ OTEL_TRACES_SAMPLER: 'jaeger_remote' })).toEqual({
      ratio: 1,
      parentBased: true,
    });
  });

  it('keeps about the ratio of new traces, by one draw each', () => {
    const { roots } = tracerWith({ ratio: 0.25, parentBased: true });
    let kept = 0;
    for (let i = 0; i < 20_000; i++) if (roots.keep()) kept++;
    expect(kept / 20_000).toBeGreaterThan(0.23);
    expect(kept / 20_000).toBeLessThan(0.27);
    expect(tracerWith({ ratio: 0, parentBased: true }).roots.keep()).toBe(false);
    expect(tracerWith({ ratio: 1, parentBased: true }).roots.keep()).toBe(true);
  });

  it('samples a root started through the draw, and no other root', () => {
    const { roots, tracer } = tracerWith({ ratio: 0.01, parentBased: true });
    const kept = roots.start(tracer, 'kept', { kind: SpanKind.SERVER }, ROOT_CONTEXT);
    expect(kept.isRecording()).toBe(true);
    // Beneath it, a child follows it.
    const child = tracer.startSpan('child', {}, trace.setSpan(ROOT_CONTEXT, kept));
    expect(child.isRecording()).toBe(true);
    expect(tracer.startSpan('stray root', {}, ROOT_CONTEXT).isRecording()).toBe(false);
  });

  it("follows a caller's decision when parent-based, decides by the trace id when not", () => {
    const based = tracerWith({ ratio: 0, parentBased: true }).tracer;
    expect(based.startSpan('s', {}, remoteParent(true)).isRecording()).toBe(true);
    expect(based.startSpan('s', {}, remoteParent(false)).isRecording()).toBe(false);
    const none = tracerWith({ ratio: 0, parentBased: false }).tracer;
    expect(none.startSpan('s', {}, remoteParent(true)).isRecording()).toBe(false);
    const all = tracerWith({ ratio: 1, parentBased: false }).tracer;
    expect(all.startSpan('s', {}, remoteParent(false)).isRecording()).toBe(true);
  });
});
