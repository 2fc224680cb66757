import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { createEdgeServer, type EdgeServerLimits } from '../src/http/edge-server.js';
import { PROBE_LIMITS } from '../src/http/probe-limits.js';
import {
  OPENMETRICS_CONTENT_TYPE,
  openMetricsText,
  prefersOpenMetrics,
} from '../src/ops/open-metrics.js';

// The consumer process's operations endpoints: /healthz (the process answers), /readyz (Redis
// reachable and every topic consumer running), /metrics (Prometheus text, or OpenMetrics with
// exemplars when the scraper's Accept asks: src/ops/open-metrics.ts). On the same edge as
// the API (src/http/edge-server.ts): what Node would answer with an empty body is answered in
// JSON, and a slow or idle client is cut. The limits are fixed (src/http/probe-limits.ts): a
// scraper and a probe or two are all that ever connect, and a neighbour's idle sockets never
// keep the container's health check out.

export const HEALTH_LIMITS: EdgeServerLimits = PROBE_LIMITS;

export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startHealthServer(deps: {
  port: number;
  host?: string;
  registry: Registry;
  isReady: () => Promise<boolean>;
  logger: Logger;
  /** Tests shorten them; production uses HEALTH_LIMITS. */
  limits?: EdgeServerLimits;
}): Promise<HealthServer> {
  const log = deps.logger;
  const server: Server = createEdgeServer(handle, deps.limits ?? HEALTH_LIMITS, {
    body: (code) => JSON.stringify({ status: code.toLowerCase().replaceAll('_', ' ') }),
    headers: { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' },
    // Connection-limit refusals and drops at debug: a flood must not become one of log lines.
    record: (code, reason) =>
      code === 'TOO_MANY_CONNECTIONS' || code === 'SERVER_BUSY'
        ? log.debug({ error: code, reason }, 'health server: refused')
        : log.info({ error: code, reason }, 'health server: refused'),
    dropped: (reason) =>
      reason === 'stalled'
        ? log.info({ reason }, 'health server: connection dropped')
        : log.debug({ reason }, 'health server: connection dropped'),
  });
  function handle(req: IncomingMessage, res: ServerResponse) {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: string, type = 'application/json') => {
      res.writeHead(status, {
        'content-type': type,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return send(405, '{"status":"method not allowed"}');
    if (path === '/healthz') return send(200, '{"status":"ok"}');
    if (path === '/readyz') {
      deps
        .isReady()
        .then((ready) =>
          send(ready ? 200 : 503, JSON.stringify({ status: ready ? 'ready' : 'not ready' })),
        )
        .catch(() => send(503, '{"status":"not ready"}'));
      return;
    }
    if (path === '/metrics') {
      // OpenMetrics, with the batch duration's exemplars, to a scraper that asks for it.
      const open = prefersOpenMetrics(req.headers.accept);
      (open ? openMetricsText(deps.registry) : deps.registry.metrics())
        .then((text) =>
          send(200, text, open ? OPENMETRICS_CONTENT_TYPE : deps.registry.contentType),
        )
        .catch((error) => {
          deps.logger.error({ err: error }, 'metrics rendering failed');
          send(500, '{"status":"error"}');
        });
      return;
    }
    send(404, '{"status":"not found"}');
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // Loopback unless the operator opts into another address (CONSUMER_HEALTH_HOST).
    server.listen(deps.port, deps.host ?? '127.0.0.1', resolve);
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : deps.port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
