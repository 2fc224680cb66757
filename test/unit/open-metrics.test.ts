import pino from 'pino';
import { Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createApiMetrics } from '../../api/ops/api-metrics.js';
import { startHealthServer } from '../../consumers/health-server.js';
import { createConsumerMetrics } from '../../consumers/metrics.js';
import { prefersOpenMetrics } from '../../src/ops/open-metrics.js';
import { parseOpenMetrics } from '../support/open-metrics-parser.js';

// /metrics as OpenMetrics: chosen by the scraper's Accept, written from the same metrics as the
// text format, with the trace and span id of a sampled request as its latency bucket's exemplar.

describe('choosing OpenMetrics by Accept', () => {
  it('answers OpenMetrics to a scraper that prefers it', () => {
    // Prometheus 2.x, then 3.x, by default.
    expect(
      prefersOpenMetrics(
        'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1',
      ),
    ).toBe(true);
    expect(
      prefersOpenMetrics(
        'application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1',
      ),
    ).toBe(true);
    expect(prefersOpenMetrics('Application/OpenMetrics-Text; version=1.0.0; charset=utf-8')).toBe(
      true,
    );
  });

  it('answers the text format to any other', () => {
    for (const accept of [
      undefined,
      '',
      '*/*',
      'text/plain;version=0.0.4',
      'text/plain, application/openmetrics-text;q=0.5',
      'application/openmetrics-text;q=0',
      'application/openmetrics-text;q=x',
      'application/json',
    ])
      expect(prefersOpenMetrics(accept), String(accept)).toBe(false);
  });
});

describe('OpenMetrics with exemplars', () => {
  const route = '/application/v1/getInstallationCurrentEnergyFlow';
  const span = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331' };

  it('parses, names counters as OpenMetrics does, and carries the exemplar of a sampled request', async () => {
    const metrics = createApiMetrics();
    const before = Date.now() / 1000;
    metrics.observe(route, 'GET', 200, 0.0003);
    metrics.observeSampled(route, 'GET', 200, 0.007, span);
    metrics.observe(route, 'GET', 200, 0.008);
    metrics.observeSampled(route, 'GET', 404, 30, {
      traceId: 'c'.repeat(32),
      spanId: 'd'.repeat(16),
    });
    metrics.refused('BAD_REQUEST');

    const families = parseOpenMetrics(await metrics.openMetrics());

    const requests = families.find((f) => f.name === 'api_requests');
    expect(requests?.type).toBe('counter');
    expect(requests?.samples.map((s) => [s.name, s.labels.status, s.value])).toEqual([
      ['api_requests_total', '200', 3],
      ['api_requests_total', '404', 1],
    ]);
    const latency = families.find((f) => f.name === 'api_request_duration_seconds');
    expect(latency?.type).toBe('histogram');
    const withExemplar = latency?.samples.filter((s) => s.exemplar !== undefined) ?? [];
    // The sampled request's bucket (le 0.01), and +Inf for the one above every bound; no other.
    expect(withExemplar.map((s) => [s.labels.status, s.labels.le])).toEqual([
      ['200', '0.01'],
      ['404', '+Inf'],
    ]);
    const [exemplar] = withExemplar.map((s) => s.exemplar);
    expect(exemplar?.labels).toEqual({ trace_id: span.traceId, span_id: span.spanId });
    expect(exemplar?.value).toBe(0.007);
    expect(exemplar?.timestamp).toBeGreaterThanOrEqual(before);
    expect(exemplar?.timestamp).toBeLessThanOrEqual(Date.now() / 1000);
  });

  it('keeps the latest exemplar of a bucket, and none for requests not sampled', async () => {
    const metrics = createApiMetrics();
    metrics.observe(route, 'GET', 200, 0.007);
    expect(await metrics.openMetrics()).not.toContain(' # {');
    metrics.observeSampled(route, 'GET', 200, 0.006, {
      traceId: 'e'.repeat(32),
      spanId: 'f'.repeat(16),
    });
    metrics.observeSampled(route, 'GET', 200, 0.009, span);
    const families = parseOpenMetrics(await metrics.openMetrics());
    const exemplars = families
      .flatMap((f) => f.samples)
      .flatMap((s) => (s.exemplar ? [s.exemplar] : []));
    expect(exemplars.map((e) => [e.labels.trace_id, e.value])).toEqual([[span.traceId, 0.009]]);
  });

  it('writes the text format with its content type unchanged, whatever was scraped as OpenMetrics', async () => {
    const metrics = createApiMetrics();
    metrics.observeSampled(route, 'GET', 200, 0.007, span);
    const text = await metrics.registry.metrics();
    await metrics.openMetrics();
    expect(await metrics.registry.metrics()).toBe(text);
    expect(metrics.registry.contentType).toBe(Registry.PROMETHEUS_CONTENT_TYPE);
    expect(text).toContain('# TYPE api_requests_total counter');
    expect(text).not.toContain(span.traceId);
  });
});

describe('OpenMetrics values', () => {
  it('spells NaN as OpenMetrics does', async () => {
    const metrics = createApiMetrics();
    new Gauge({ name: 'test_not_a_number', help: 'NaN', registers: [metrics.registry] }).set(
      Number.NaN,
    );
    const families = parseOpenMetrics(await metrics.openMetrics());
    expect(families.find((f) => f.name === 'test_not_a_number')?.samples[0]?.value).toBeNaN();
    expect(await metrics.openMetrics()).toContain('test_not_a_number NaN\n');
  });
});

describe("the consumers' /metrics", () => {
  it('answers OpenMetrics to a scraper that asks for it, the text format to any other', async () => {
    const metrics = createConsumerMetrics({ exemplars: true });
    metrics.applied.inc({ topic: 't' });
    const health = await startHealthServer({
      port: 0,
      host: '127.0.0.1',
      registry: metrics.registry,
      isReady: async () => true,
      logger: pino({ level: 'silent' }),
    });
    try {
      const scrape = (accept?: string) =>
        fetch(`http://127.0.0.1:${health.port}/metrics`, {
          headers: accept ? { accept } : {},
        });
      const open = await scrape(
        'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5',
      );
      expect(open.headers.get('content-type')).toBe(Registry.OPENMETRICS_CONTENT_TYPE);
      const families = parseOpenMetrics(await open.text());
      expect(families.find((f) => f.name === 'ingest_events_applied')?.samples[0]?.name).toBe(
        'ingest_events_applied_total',
      );
      const text = await scrape();
      expect(text.headers.get('content-type')).toBe(Registry.PROMETHEUS_CONTENT_TYPE);
      expect(await text.text()).toBe(await metrics.registry.metrics());
    } finally {
      await health.close();
    }
  });
});
