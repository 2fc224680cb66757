import type { RootSampling } from './root-sampling.js';
import { type TracingSettings, tracingSettings } from './tracing-settings.js';

// The one door to tracing, called first by each process's main.ts. Off (the default), it loads
// no OpenTelemetry module and returns null: nothing is patched, nothing runs on the hot paths.
// On, it loads the SDK (tracing-sdk.ts) before the caller imports the rest of the process, so
// the ioredis instrumentation's import hook is in place when ioredis loads.

export interface TracingRuntime {
  /** Which new traces are kept, drawn before their root span is built (root-sampling.ts). */
  readonly roots: RootSampling;
  /** Exports what is still buffered, then stops the SDK; call before the process exits. */
  shutdown(): Promise<void>;
}

export async function startTracing(
  env: Readonly<Record<string, string | undefined>>,
  defaultServiceName: string,
): Promise<TracingRuntime | null> {
  const settings: TracingSettings = tracingSettings(env, defaultServiceName);
  if (!settings.enabled) return null;
  const { startTracingSdk } = await import('./tracing-sdk.js');
  return startTracingSdk(settings);
}
