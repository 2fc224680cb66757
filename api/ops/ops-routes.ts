import type { FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import type { ApiMetrics } from './api-metrics.js';

// Operations endpoints, outside the API base: liveness, readiness (Redis answers), metrics.

export function registerOpsRoutes(
  app: FastifyInstance,
  deps: { redis: Redis; metrics: ApiMetrics },
): void {
  app.get('/healthz', { logLevel: 'warn' }, async (_request, reply) =>
    reply.type('application/json').send('{"status":"ok"}'),
  );
  app.get('/readyz', { logLevel: 'warn' }, async (_request, reply) => {
    try {
      await deps.redis.ping();
      return reply.type('application/json').send('{"status":"ready"}');
    } catch {
      return reply.code(503).type('application/json').send('{"status":"redis unreachable"}');
    }
  });
  app.get('/metrics', { logLevel: 'warn' }, async (_request, reply) =>
    reply.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics()),
  );
}
