import type { FastifyInstance } from 'fastify';
import { OPENMETRICS_CONTENT_TYPE, prefersOpenMetrics } from '../../src/ops/open-metrics.js';
import { readEpoch } from '../../src/read-model/epoch.js';
import type { ReadModelKeys } from '../../src/read-model/keys.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import { API_HEADERS } from '../http/response-headers.js';
import type { ApiMetrics } from './api-metrics.js';

// Operations endpoints, outside the API base: liveness, readiness (Redis answers and holds the
// read model's epoch marker: without it the store lost its data and valid keys would get 401),
// metrics (Prometheus text, or OpenMetrics with exemplars when the scraper's Accept asks).

export function registerOpsRoutes(
  app: FastifyInstance,
  deps: { redis: RedisClient; metrics: ApiMetrics; keys: ReadModelKeys },
): void {
  app.get('/healthz', { logLevel: 'warn' }, async (_request, reply) =>
    reply.headers(API_HEADERS).type('application/json').send('{"status":"ok"}'),
  );
  app.get('/readyz', { logLevel: 'warn' }, async (_request, reply) => {
    try {
      const epoch = await readEpoch(deps.redis, deps.keys);
      if (epoch === null || !epoch.complete) {
        return reply
          .code(503)
          .headers(API_HEADERS)
          .type('application/json')
          .send(`{"status":"read model ${epoch ? 'being rebuilt' : 'not built'}"}`);
      }
      return reply.headers(API_HEADERS).type('application/json').send('{"status":"ready"}');
    } catch {
      return reply
        .code(503)
        .headers(API_HEADERS)
        .type('application/json')
        .send('{"status":"redis unreachable"}');
    }
  });
  // OpenMetrics, with exemplars, to a scraper that asks for it; else the text format.
  app.get('/metrics', { logLevel: 'warn' }, async (request, reply) => {
    const open = prefersOpenMetrics(request.headers.accept);
    const body = open ? await deps.metrics.openMetrics() : await deps.metrics.registry.metrics();
    return reply
      .headers(API_HEADERS)
      .header('vary', 'Accept')
      .type(open ? OPENMETRICS_CONTENT_TYPE : deps.metrics.registry.contentType)
      .send(body);
  });
}
