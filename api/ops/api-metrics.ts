import { Counter, Histogram, Registry } from 'prom-client';

// Request counts and latency by route and status, in the API's own registry.

export interface ApiMetrics {
  readonly registry: Registry;
  observe(route: string, method: string, status: number, seconds: number): void;
}

export function createApiMetrics(): ApiMetrics {
  const registry = new Registry();
  const labelNames = ['route', 'method', 'status'] as const;
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
  return {
    registry,
    observe(route, method, status, seconds) {
      const labels = { route, method, status: String(status) };
      requests.inc(labels);
      latency.observe(labels, seconds);
    },
  };
}
