import { Counter, Registry } from 'prom-client';
import { DROP_REASONS, type DropReason } from '../../src/http/edge-server.js';
import { openMetricsText } from '../../src/ops/open-metrics.js';
import {
  createLabelledHistogram,
  type ExemplarSpan,
  type HistogramSeries,
} from './labelled-histogram.js';

// Request counts and latency by route and status, in the API's own registry; answers the Node
// server wrote before routing, by error code; connections closed unanswered, by reason. A
// sampled request's latency keeps its span as an exemplar, written only as OpenMetrics.

export interface ApiMetrics {
  readonly registry: Registry;
  observe(route: string, method: string, status: number, seconds: number): void;
  /** observe, for a request whose span was sampled: its ids become the bucket's exemplar. */
  observeSampled(
    route: string,
    method: string,
    status: number,
    seconds: number,
    span: ExemplarSpan,
  ): void;
  /** The registry written as OpenMetrics, with the latency's exemplars (open-metrics.ts). */
  openMetrics(): Promise<string>;
  refused(error: string): void;
  dropped(reason: DropReason): void;
}

const LABELS = ['route', 'method', 'status'] as const;
type Label = (typeof LABELS)[number];

interface Child {
  readonly labels: Record<Label, string>;
  readonly time: HistogramSeries;
  counted: number;
}

export function createApiMetrics(): ApiMetrics {
  const registry = new Registry();
  // Bounded by the routes (unmatched ones share one template) times methods times statuses.
  // Found by route, then method, then status: those are constant strings and a number, so a
  // request builds and hashes no key string of its own.
  const children: Child[] = [];
  const byRoute = new Map<string, Map<string, Map<number, Child>>>();
  const requests = new Counter({
    name: 'api_requests_total',
    help: 'HTTP requests answered, by route template, method and status',
    labelNames: LABELS,
    registers: [registry],
    // Brought up to the latency series' counts when scraped: nothing per request.
    collect() {
      for (const child of children) {
        const answered = child.time.count;
        if (answered > child.counted) requests.inc(child.labels, answered - child.counted);
        child.counted = answered;
      }
    },
  });
  const latency = createLabelledHistogram({
    name: 'api_request_duration_seconds',
    help: 'Time from request received to response sent, by route template, method and status',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registry,
  });
  const refusals = new Counter({
    name: 'api_refused_requests_total',
    help: 'Requests answered before routing (malformed HTTP, missing, repeated or invalid Host, HTTP version, CONNECT, foreign target, Expect, oversized headers, timeout), by error code',
    labelNames: ['error'] as const,
    registers: [registry],
  });
  const drops = new Counter({
    name: 'api_dropped_connections_total',
    help: 'Connections closed unanswered: refused at API_MAX_CONNECTIONS (max-connections) or API_MAX_CONNECTIONS_PER_CLIENT (per-client) with no answer possible, an answer stalled past API_SOCKET_IDLE_TIMEOUT_MS (stalled), closed to make room for another client (reclaimed)',
    labelNames: ['reason'] as const,
    registers: [registry],
  });
  // Every reason from the start, so a rate or an alert has a series before the first drop.
  for (const reason of DROP_REASONS) drops.inc({ reason }, 0);
  const exemplars = new Map([[latency.openMetric.name, latency.openMetric]]);
  return {
    registry,
    refused: (error) => refusals.inc({ error }),
    dropped: (reason) => drops.inc({ reason }),
    observe: (route, method, status, seconds) => seriesOf(route, method, status).observe(seconds),
    observeSampled: (route, method, status, seconds, span) =>
      seriesOf(route, method, status).observeSampled(seconds, span),
    openMetrics: () => openMetricsText(registry, exemplars),
  };

  function seriesOf(route: string, method: string, status: number): HistogramSeries {
    // The series found once per route, method and status; per request only numbers change.
    let byMethod = byRoute.get(route);
    if (byMethod === undefined) {
      byMethod = new Map();
      byRoute.set(route, byMethod);
    }
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) {
      byStatus = new Map();
      byMethod.set(method, byStatus);
    }
    let child = byStatus.get(status);
    if (child === undefined) {
      const labels = { route, method, status: String(status) };
      child = { labels, time: latency.series(labels), counted: 0 };
      byStatus.set(status, child);
      children.push(child);
    }
    return child.time;
  }
}
