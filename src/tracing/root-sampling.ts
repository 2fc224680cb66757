import {
  type Context,
  isSpanContextValid,
  type Sampler,
  SamplingDecision,
  type Span,
  type SpanOptions,
  TraceFlags,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import type { TraceSampling } from './tracing-settings.js';

// Which new traces are kept, decided before their root span exists. Left to the SDK, a root
// the sampler drops still costs a trace id and a span id drawn and formatted, the sampler's
// parsing of the trace id and a non-recording span object: at 1 % that is 99 of 100 requests
// and batches. Here a trace not kept costs one Math.random(): the request hooks and the batch
// tracer draw first and build their span (name, attributes) only when the draw keeps it. The
// SDK is given the matching sampler: a root is sampled only when started through `start`, a
// span with a parent decides as OTEL_TRACES_SAMPLER says (parent-based: as its parent; plain:
// by the ratio on the trace id, as the SDK's TraceIdRatioBasedSampler, for a remote parent).

export interface RootSampling {
  /** Whether a new trace is kept: one draw, before anything of its span is built. */
  keep(): boolean;
  /** Starts the root span of a trace `keep` kept (a span the caller checks `isRecording` of). */
  start(tracer: Tracer, name: string, options: SpanOptions, parent: Context): Span;
}

/** No draw of our own: every root goes to the SDK's sampler (tests, with a sampler of theirs). */
export const sdkDecides: RootSampling = {
  keep: () => true,
  start: (tracer, name, options, parent) => tracer.startSpan(name, options, parent),
};

const SAMPLED = { decision: SamplingDecision.RECORD_AND_SAMPLED };
const DROPPED = { decision: SamplingDecision.NOT_RECORD };

/** Our draw for roots and the SDK's sampler to go with it, from OTEL_TRACES_SAMPLER. */
export function rootSampling(settings: TraceSampling): { roots: RootSampling; sampler: Sampler } {
  let admitting = false;
  const roots: RootSampling = {
    keep: () => settings.ratio >= 1 || Math.random() < settings.ratio,
    start(tracer, name, options, parent) {
      // The SDK asks the sampler synchronously, inside startSpan.
      admitting = true;
      try {
        return tracer.startSpan(name, options, parent);
      } finally {
        admitting = false;
      }
    },
  };
  const upperBound = Math.floor(settings.ratio * 0xffffffff);
  const sampler: Sampler = {
    shouldSample(context, traceId) {
      const parent = trace.getSpanContext(context);
      if (parent === undefined || !isSpanContextValid(parent)) return admitting ? SAMPLED : DROPPED;
      if (parent.isRemote && !settings.parentBased)
        return traceIdValue(traceId) < upperBound ? SAMPLED : DROPPED;
      return (parent.traceFlags & TraceFlags.SAMPLED) !== 0 ? SAMPLED : DROPPED;
    },
    toString: () => `RootSampling{ratio=${settings.ratio}, parentBased=${settings.parentBased}}`,
  };
  return { roots, sampler };
}

/** The trace id folded to 32 bits, as the SDK's TraceIdRatioBasedSampler folds it. */
function traceIdValue(traceId: string): number {
  let value = 0;
  for (let i = 0; i < traceId.length / 8; i++) {
    value = (value ^ Number.parseInt(traceId.slice(i * 8, i * 8 + 8), 16)) >>> 0;
  }
  return value;
}
