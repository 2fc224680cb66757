import { Counter, Gauge, type Registry } from 'prom-client';

// The energy-flow streams of this process: how many are open, how they end, and which limit
// refused the ones that never started (docs/operations.md "Streams"). Every label value is
// written from the start at 0, so a rate or an alert has a series before the first event.

/** Why a stream ended: its client left, access ended, it stopped reading, shutdown, a failed re-read. */
export const STREAM_END_REASONS = [
  'client',
  'revoked',
  'slow-reader',
  'shutdown',
  'error',
] as const;
export type StreamEnd = (typeof STREAM_END_REASONS)[number];

/**
 * The caps of docs/security.md: per key, application, client, the process, the playground proxy.
 * A stream policy that is not here fails to compile where its refusal is counted
 * (flow-stream-route.ts), so this list needs nothing of streams/.
 */
export const STREAM_REFUSALS = [
  'streams-per-key',
  'streams-per-application',
  'streams-per-client',
  'streams-max',
  'playground-proxy',
] as const;
export type StreamRefusal = (typeof STREAM_REFUSALS)[number];

export interface StreamMetrics {
  opened(): void;
  closed(reason: StreamEnd): void;
  refused(limit: StreamRefusal): void;
}

/** The caps a process is configured with, exported so a rule divides by the real limit. */
export interface StreamCaps {
  readonly maxStreams: number;
  readonly streamsPerKey: number;
  readonly streamsPerApplication: number;
}

export function createStreamMetrics(registry: Registry, caps: StreamCaps): StreamMetrics {
  let open = 0;
  const opens = new Counter({
    name: 'api_stream_opens_total',
    help: 'Energy-flow streams started (headers sent)',
    registers: [registry],
  });
  const closes = new Counter({
    name: 'api_stream_closes_total',
    help: 'Energy-flow streams ended, by reason: client (the client left), revoked (access ended), slow-reader (over 1 MiB unsent), shutdown, error (a re-read failed)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'api_stream_refusals_total',
    help: 'Stream requests refused by a concurrency cap: streams-per-key, -application, -client (429), streams-max (503, API_STREAMS_MAX or shutting down), playground-proxy (503, the proxy relays as many as it may)',
    labelNames: ['limit'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'api_streams_open',
    help: 'Energy-flow streams open in this process (API_STREAMS_MAX caps them)',
    registers: [registry],
    collect() {
      this.set(open);
    },
  });
  const limits = new Gauge({
    name: 'api_stream_limit',
    help: 'The stream caps of this process, by the refusal limit they set: streams-max (API_STREAMS_MAX), streams-per-key (API_STREAMS_PER_KEY), streams-per-application (API_STREAMS_PER_APPLICATION)',
    labelNames: ['limit'] as const,
    registers: [registry],
  });
  limits.set({ limit: 'streams-max' }, caps.maxStreams);
  limits.set({ limit: 'streams-per-key' }, caps.streamsPerKey);
  limits.set({ limit: 'streams-per-application' }, caps.streamsPerApplication);
  for (const reason of STREAM_END_REASONS) closes.inc({ reason }, 0);
  for (const limit of STREAM_REFUSALS) refusals.inc({ limit }, 0);
  return {
    opened() {
      open++;
      opens.inc();
    },
    closed(reason) {
      open--;
      closes.inc({ reason });
    },
    refused: (limit) => refusals.inc({ limit }),
  };
}
