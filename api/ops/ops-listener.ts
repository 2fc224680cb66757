import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import { createEdgeServer, type EdgeServerHooks } from '../../src/http/edge-server.js';
import { PROBE_LIMITS } from '../../src/http/probe-limits.js';
import { errorBody } from '../errors/error-catalog.js';
import { API_HEADERS } from '../http/response-headers.js';

// The API's ops listener (API_OPS_HOST, API_OPS_PORT): /healthz, /readyz and /metrics on a port
// of their own, with the probe limits of the consumers' health server, answered by the same
// routes as on the API port. A flood of the API port (connections, streams) never reaches it,
// so an orchestrator's probe and the scraper still get through. Any other path: 404.

const OPS_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

export interface OpsListener {
  readonly port: number;
  close(): Promise<void>;
}

export async function startOpsListener(
  app: FastifyInstance,
  where: { host: string; port: number },
): Promise<OpsListener> {
  await app.ready();
  // Logged, not counted: the API port's counters are about the API's clients. At debug: a
  // flood of this port must not become one of log lines.
  const hooks: EdgeServerHooks = {
    body: errorBody,
    headers: API_HEADERS,
    record: (code, reason) =>
      app.log.debug({ error: code, reason, listener: 'ops' }, 'refused before routing'),
    dropped: (reason) => app.log.debug({ reason, listener: 'ops' }, 'connection dropped'),
  };
  const server: Server = createEdgeServer(
    (req, res) => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      if (!OPS_PATHS.has(path)) {
        res.writeHead(404, { ...API_HEADERS, 'content-type': 'application/json; charset=utf-8' });
        res.end(errorBody('NOT_FOUND'));
        return;
      }
      app.routing(req, res);
    },
    PROBE_LIMITS,
    hooks,
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(where.port, where.host, resolve);
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : where.port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
