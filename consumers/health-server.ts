import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

// The consumer process's operations endpoints: /healthz (the process answers), /readyz (Redis
// reachable and every topic consumer running), /metrics (Prometheus text).

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
}): Promise<HealthServer> {
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: string, type = 'application/json') => {
      res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
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
      deps.registry
        .metrics()
        .then((text) => send(200, text, deps.registry.contentType))
        .catch((error) => {
          deps.logger.error({ err: error }, 'metrics rendering failed');
          send(500, '{"status":"error"}');
        });
      return;
    }
    send(404, '{"status":"not found"}');
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(deps.port, deps.host ?? '0.0.0.0', resolve);
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : deps.port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
