import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createApiMetrics } from '../../api/ops/api-metrics.js';

// The API's request metrics are kept in plain numbers per label set (no prom-client call per
// request); /metrics must read exactly as prom-client's own Counter and Histogram wrote it.
function promClientMetrics() {
  const registry = new Registry();
  const labelNames = ['route', 'method', 'status'];
  const requests = new Counter({
    name: 'api_requests_total',
    help: 'HTTP requests answered, by route template, method and status',
    labelNames,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'api_request_duration_seconds',
    help: 'Time from request received to response sent, by route template, method and status',
    labelNames,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'api_refused_requests_total',
    help: 'Requests answered before routing (malformed HTTP, missing, repeated or invalid Host, HTTP version, CONNECT, foreign target, Expect, oversized headers, timeout), by error code',
    labelNames: ['error'],
    registers: [registry],
  });
  const drops = new Counter({
    name: 'api_dropped_connections_total',
    help: 'Connections closed unanswered: refused at API_MAX_CONNECTIONS (max-connections) or API_MAX_CONNECTIONS_PER_CLIENT (per-client) with no answer possible, an answer stalled past API_SOCKET_IDLE_TIMEOUT_MS (stalled), closed to make room for another client (reclaimed)',
    labelNames: ['reason'],
    registers: [registry],
  });
  // Every drop reason written from the start, at 0.
  for (const reason of ['max-connections', 'per-client', 'stalled', 'reclaimed']) {
    drops.inc({ reason }, 0);
  }
  return {
    registry,
    observe(route: string, method: string, status: number, seconds: number) {
      const labels = { route, method, status: String(status) };
      requests.inc(labels);
      latency.observe(labels, seconds);
    },
    refused: (error: string) => refusals.inc({ error }),
    dropped: (reason: string) => drops.inc({ reason }),
  };
}

describe('API metrics', () => {
  it('write what prom-client writes for the same requests, scrape after scrape', async () => {
    const ours = createApiMetrics();
    const theirs = promClientMetrics();
    const both = (f: (m: typeof theirs | typeof ours) => void) => {
      f(ours);
      f(theirs);
    };
    expect(await ours.registry.metrics()).toBe(await theirs.registry.metrics());
    const span = { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16) };
    const routes = ['/application/v1/getInstallations', 'unmatched', '/healthz'];
    // Bounds exactly, between them, above the last one, zero.
    const seconds = [0, 0.0005, 0.0007, 0.001, 0.3, 2.5, 2.6, 40, 0.00001];
    let n = 0;
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 200; i++) {
        const route = routes[(i * 7 + round) % routes.length] as string;
        const status = [200, 304, 401, 404][(i + round) % 4] as number;
        const method = i % 5 === 0 ? 'POST' : 'GET';
        const s = seconds[n++ % seconds.length] as number;
        // Every third request sampled: ours keeps its exemplar, which the text format never shows.
        if (i % 3 === 0) ours.observeSampled(route, method, status, s, span);
        else ours.observe(route, method, status, s);
        theirs.observe(route, method, status, s);
      }
      both((m) => m.refused('BAD_REQUEST'));
      both((m) => m.dropped('stalled'));
      // An OpenMetrics scrape between text scrapes leaves the text format as it was (prom-client
      // renames counters it writes as OpenMetrics on the metric objects themselves).
      expect(await ours.openMetrics()).toContain('# EOF');
      expect(await ours.registry.metrics()).toBe(await theirs.registry.metrics());
    }
    expect(await ours.registry.getMetricsAsJSON()).toEqual(
      await theirs.registry.getMetricsAsJSON(),
    );
  });
});
