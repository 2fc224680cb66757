import { describe, expect, it } from 'vitest';
import { tracingSettings } from '../../src/tracing/tracing-settings.js';

// Tracing is off unless the standard OpenTelemetry variables configure an exporter: a process
// started without them loads no OpenTelemetry module at all.

const on = (env: Record<string, string>) => tracingSettings(env, 'read-model-api').enabled;

describe('tracing settings', () => {
  it('is off without an exporter, whatever else is set', () => {
    expect(on({})).toBe(false);
    expect(on({ OTEL_SERVICE_NAME: 'x', OTEL_TRACES_SAMPLER: 'always_on' })).toBe(false);
    expect(on({ OTEL_EXPORTER_OTLP_ENDPOINT: '' })).toBe(false);
  });

  it('is on with an OTLP endpoint, or an exporter named', () => {
    expect(on({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toBe(true);
    expect(on({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toBe(true);
    expect(on({ OTEL_TRACES_EXPORTER: 'console' })).toBe(true);
    expect(on({ OTEL_TRACES_EXPORTER: 'otlp,console' })).toBe(true);
  });

  it('is off when the SDK is disabled or the exporter is none, endpoint or not', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(on({ ...endpoint, OTEL_SDK_DISABLED: 'true' })).toBe(false);
    expect(on({ ...endpoint, OTEL_TRACES_EXPORTER: 'none' })).toBe(false);
  });

  it('names the service unless the environment does', () => {
    expect(tracingSettings({}, 'read-model-api').serviceName).toBe('read-model-api');
    expect(
      tracingSettings({ OTEL_SERVICE_NAME: 'api-eu' }, 'read-model-api').serviceName,
    ).toBeUndefined();
    expect(
      tracingSettings(
        { OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.name=a' },
        'x',
      ).serviceName,
    ).toBeUndefined();
  });
});
