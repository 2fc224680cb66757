import { z } from 'zod';

// Whether this process traces, decided from the OpenTelemetry SDK's own environment variables
// (the SDK reads the rest itself: sampler, exporter, endpoint, headers, resource). Tracing is
// off unless an exporter is configured: an OTLP endpoint, or OTEL_TRACES_EXPORTER naming one
// (`console` for the demo). OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off.

const envSchema = z.object({
  OTEL_SDK_DISABLED: z.string().optional(),
  OTEL_TRACES_EXPORTER: z.string().optional(),
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.string().optional(),
  OTEL_SERVICE_NAME: z.string().optional(),
  OTEL_RESOURCE_ATTRIBUTES: z.string().optional(),
});

export interface TracingSettings {
  readonly enabled: boolean;
  /** The service name to give when the environment names none (OTEL_SERVICE_NAME wins). */
  readonly serviceName: string | undefined;
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
  };
}
