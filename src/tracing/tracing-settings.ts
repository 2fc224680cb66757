import { z } from 'zod';

// Whether this process traces, decided from the OpenTelemetry SDK's own environment variables
// (the SDK reads the rest itself: exporter, endpoint, headers, resource), and the sampler they
// name, read here as the SDK reads it (root-sampling.ts decides roots before their span exists).
// Tracing is off unless an exporter is configured: an OTLP endpoint, or OTEL_TRACES_EXPORTER
// naming one (`console` for the demo). OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn
// it off.

const envSchema = z.object({
  OTEL_SDK_DISABLED: z.string().optional(),
  OTEL_TRACES_EXPORTER: z.string().optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().optional(),
  OTEL_SERVICE_NAME: z.string().optional(),
  OTEL_RESOURCE_ATTRIBUTES: z.string().optional(),
  OTEL_TRACES_SAMPLER: z.string().optional(),
  OTEL_TRACES_SAMPLER_ARG: z.string().optional(),
});

/**
 * The sampler OTEL_TRACES_SAMPLER names, as the SDK builds it: `ratio` of new traces kept
 * (always_on 1, always_off 0, traceidratio its argument), and whether a span with a parent
 * follows the parent's decision (parentbased_*) or decides again.
 */
export interface TraceSampling {
  readonly ratio: number;
  readonly parentBased: boolean;
}

export interface TracingSettings {
  readonly enabled: boolean;
  /** The service name to give when the environment names none (OTEL_SERVICE_NAME wins). */
  readonly serviceName: string | undefined;
  readonly sampling: TraceSampling;
}

export function tracingSettings(
  env: Readonly<Record<string, string | undefined>>,
  defaultServiceName: string,
): TracingSettings {
  const e = envSchema.parse(
    Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== '')),
  );
  const exporters = (e.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const disabled = e.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true';
  const exporterNamed = exporters.length > 0 && !exporters.every((s) => s === 'none');
  const endpoint =
    exporters.length === 0 &&
    (e.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined ||
      e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined);
  const named =
    e.OTEL_SERVICE_NAME !== undefined ||
    /(^|,)\s*service\.name=/.test(e.OTEL_RESOURCE_ATTRIBUTES ?? '');
  return {
    enabled: !disabled && (exporterNamed || endpoint),
    serviceName: named ? undefined : defaultServiceName,
    sampling: samplingOf(e.OTEL_TRACES_SAMPLER, e.OTEL_TRACES_SAMPLER_ARG),
  };
}

/** The SDK's reading: unset or unknown is parentbased_always_on; a bad ratio is 1. */
function samplingOf(name: string | undefined, arg: string | undefined): TraceSampling {
  const given = arg === undefined ? Number.NaN : Number(arg);
  const ratio = given >= 0 && given <= 1 ? given : 1;
  switch (name?.trim()) {
    case 'always_on':
      return { ratio: 1, parentBased: false };
    case 'always_off':
      return { ratio: 0, parentBased: false };
    case 'traceidratio':
      return { ratio, parentBased: false };
    case 'parentbased_always_off':
      return { ratio: 0, parentBased: true };
    case 'parentbased_traceidratio':
      return { ratio, parentBased: true };
    default:
      return { ratio: 1, parentBased: true };
  }
}
