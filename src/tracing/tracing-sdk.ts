import { register } from 'node:module';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { createAddHookMessageChannel } from 'import-in-the-middle';
import { rootSampling } from './root-sampling.js';
import type { TracingRuntime } from './start-tracing.js';
import type { TracingSettings } from './tracing-settings.js';

// The OpenTelemetry Node SDK, configured by its standard environment variables
// (OTEL_TRACES_SAMPLER, OTEL_EXPORTER_OTLP_*, OTEL_SERVICE_NAME, …). Loaded only when tracing
// is on (start-tracing.ts). Our own spans (batches, passes, requests) use @opentelemetry/api;
// the one module patched is ioredis, so every Redis command shows beneath the span that sent it.
// Traces only: the SDK would otherwise also start OTLP metrics and logs exporters by default
// (OTEL_METRICS_EXPORTER, OTEL_LOGS_EXPORTER unset mean otlp), sending to the traces' collector
// every minute; the metrics are Prometheus's (/metrics).

export async function startTracingSdk(settings: TracingSettings): Promise<TracingRuntime> {
  // ESM: ioredis is imported, not required, so patching it needs import-in-the-middle's loader
  // hook, told by the instrumentation which modules to wrap (only those: nothing else is hooked).
  const { registerOptions, waitForAllMessagesAcknowledged } = createAddHookMessageChannel();
  register('import-in-the-middle/hook.mjs', import.meta.url, registerOptions);
  const { roots, sampler } = rootSampling(settings.sampling);
  const sdk = new NodeSDK({
    ...(settings.serviceName ? { serviceName: settings.serviceName } : {}),
    sampler,
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new IORedisInstrumentation({
        // Commands only beneath a batch or a request, never the background ones (pings, the
        // change feed, lag reads) that would each make a trace of their own.
        requireParentSpan: true,
        // The command's name alone: key names carry an API key's hash (its lookup), and
        // arguments carry records.
        dbStatementSerializer: (command) => command,
      }),
    ],
  });
  sdk.start();
  await waitForAllMessagesAcknowledged();
  // A collector that is down must not fail the process's exit: what was not sent is lost.
  return { roots, shutdown: () => sdk.shutdown().catch(() => undefined) };
}
