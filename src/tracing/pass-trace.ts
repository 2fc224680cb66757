// The phases of one projection pass (load, fold, write) as the write path reports them to
// tracing, without depending on OpenTelemetry: the consumers hand in an implementation only
// when tracing is on (consumers/tracing/batch-tracing.ts); off, `untraced` runs each phase as
// it is and never computes what a phase counted, and the writes announce no trace context.

export type PassPhase = 'load' | 'fold' | 'write';

/** What a phase counted: installations, devices, Redis round trips, …; numbers or id lists. */
export type PhaseCounts = Record<string, number | number[]>;

/** Records the phase's counts on its span; given a function, so an untraced pass counts nothing. */
export type PhaseDone = (counts: () => PhaseCounts) => void;

export interface PassTrace {
  /** Runs one phase of the pass (in a span of its own when traced). */
  phase<T>(name: PassPhase, run: (done: PhaseDone) => Promise<T>): Promise<T>;
  /**
   * The W3C traceparent of the active span when it is sampled (else undefined), for a write to
   * announce with its change (src/read-model/change-feed.ts).
   */
  traceparent(): string | undefined;
}

const ignore: PhaseDone = () => {};

export const untraced: PassTrace = {
  phase: (_name, run) => run(ignore),
  traceparent: () => undefined,
};
