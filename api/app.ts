import formbody from '@fastify/formbody';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Redis } from 'ioredis';
import type { Config } from '../src/config.js';
import { createKeys } from '../src/read-model/keys.js';
import { decorateKeyHash } from './auth/authenticate.js';
import { clientErrorHandler, registerHttpErrors } from './http-errors.js';
import { registerOpenApiRoute } from './openapi/openapi-route.js';
import { createApiMetrics } from './ops/api-metrics.js';
import { registerOpsRoutes } from './ops/ops-routes.js';
import { registerPlayground } from './playground/playground.js';
import { createApiReader } from './read-model/api-reader.js';
import { registerDevicesRoute } from './routes/devices-route.js';
import { registerEnergyFlowRoute } from './routes/energy-flow-route.js';
import { registerInstallationsRoute } from './routes/installations-route.js';
import type { RouteContext } from './routes/route-context.js';

export interface ApiDeps {
  readonly config: Config;
  readonly logger: FastifyBaseLogger;
  readonly redis: Redis;
  readonly clock?: () => number;
}

/** The API as a Fastify instance, not listening: main.ts or a test decides where it runs. */
export function buildApi(deps: ApiDeps): FastifyInstance {
  const { config, redis } = deps;
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: config.api.bodyLimitBytes,
    requestTimeout: config.api.requestTimeoutMs,
    clientErrorHandler,
    // HEAD is not part of the API; it answers 405 like any other method.
    exposeHeadRoutes: false,
  });
  const metrics = createApiMetrics();
  // Callback style: no promise per request for a hook that never awaits.
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.observe(route, request.method, reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  registerHttpErrors(app);
  decorateKeyHash(app);
  const ctx: RouteContext = {
    reader: createApiReader(redis, createKeys(config.redis.keyPrefix)),
    clock: deps.clock ?? Date.now,
    onlineWindowSeconds: config.ingest.onlineWindowSeconds,
  };
  app.register(
    async (api) => {
      // Form bodies only (read-api.md "Request method notes"); JSON or text bodies get 415.
      api.removeAllContentTypeParsers();
      await api.register(formbody);
      registerInstallationsRoute(api, ctx);
      registerDevicesRoute(api, ctx);
      registerEnergyFlowRoute(api, ctx);
      registerOpenApiRoute(api, config.api.basePath);
    },
    { prefix: config.api.basePath },
  );
  registerOpsRoutes(app, { redis, metrics });
  registerPlayground(app, config);
  return app;
}
