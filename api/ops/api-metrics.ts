import { Counter, Histogram, Registry } from 'prom-client';
import type { DropReason } from '../../src/http/edge-server.js';

// Request counts and latency by route and status, in the API's own registry; answers the Node
// server wrote before routing, by error code; connections closed unanswered, by reason.

export interface ApiMetrics {
  readonly registry: Registry;
  observe(route: string, method: string, status: number, seconds: number): void;
  refused(error: string): void;
  dropped(reason: DropReason): void;
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
  const refusals = new Counter({
    name: 'api_refused_requests_total',
    help: 'Requests answered before routing (malformed HTTP, missing, repeated or invalid Host, HTTP version, CONNECT, foreign target, Expect, oversized headers, timeout), by error code',
    labelNames: ['error'] as const,
    registers: [registry],
  });
  const drops = new Counter({
    name: 'api_dropped_connections_total',
    help: 'Connections closed unanswered: API_MAX_CONNECTIONS open (max-connections), API_MAX_CONNECTIONS_PER_CLIENT open from the address (per-client), an answer stalled past API_SOCKET_IDLE_TIMEOUT_MS (stalled)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  // Bounded by the routes (unmatched ones share one template) times methods times statuses.
  const children = new Map<
    string,
    { count: { inc(): void }; time: { observe(value: number): void } }
  >();
  return {
    registry,
    refused: (error) => refusals.inc({ error }),
    dropped: (reason) => drops.inc({ reason }),
    observe(route, method, status, seconds) {
      // The labelled children, found once per route, method and status: prom-client otherwise
      // builds and hashes the label set twice per request.
      const id = `${route} ${method} ${status}`;
      let child = children.get(id);
      if (child === undefined) {
        const labels = { route, method, status: String(status) };
        child = { count: requests.labels(labels), time: latency.labels(labels) };
        children.set(id, child);
      }
      child.count.inc();
      child.time.observe(seconds);
    },
  };
}
