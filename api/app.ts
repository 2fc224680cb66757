import formbody from '@fastify/formbody';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Config } from '../src/config.js';
import { clientOf } from '../src/http/client-address.js';
import { registerRuntimeMetrics } from '../src/ops/runtime-metrics.js';
import { createKeys } from '../src/read-model/keys.js';
import type { RedisClient } from '../src/read-model/redis-connection.js';
import { decorateKeyHash } from './auth/authenticate.js';
import { createClientErrorHandler, createEdgeServer } from './edge/http-server.js';
import type { TransportErrorCode } from './errors/error-catalog.js';
import { createStreamCoders } from './http/compression.js';
import { createFrameworkErrorHandler, registerHttpErrors } from './http-errors.js';
import { registerOpenApiRoute } from './openapi/openapi-route.js';
import { createApiMetrics } from './ops/api-metrics.js';
import { registerNearCacheMetrics } from './ops/near-cache-metrics.js';
import { registerOpsRoutes } from './ops/ops-routes.js';
import { createQuotaRefusals } from './ops/quota-metrics.js';
import { createStreamMetrics } from './ops/stream-metrics.js';
import { registerPlayground } from './playground/playground.js';
import { createQuotas } from './quotas/quota.js';
import { createReadSide } from './read-side.js';
import { requestLogController } from './request-logging.js';
import { registerBulkFlowRoute } from './routes/bulk-flow-route.js';
import { registerDevicesRoute } from './routes/devices-route.js';
import { registerEnergyFlowRoute } from './routes/energy-flow-route.js';
import { registerFlowStreamRoute, type StreamCounting } from './routes/flow-stream-route.js';
import { registerInstallationsRoute } from './routes/installations-route.js';
import type { RouteContext } from './routes/route-context.js';
import { createStreamLimits } from './streams/stream-limits.js';
import type { ApiTracer } from './tracing/api-tracer.js';

export interface ApiDeps {
  readonly config: Config;
  readonly logger: FastifyBaseLogger;
  readonly redis: RedisClient;
  readonly clock?: () => number;
  /** Request spans (api/tracing/); absent, tracing is off and the app has no trace of it. */
  readonly tracer?: ApiTracer;
}

/** The API as a Fastify instance, not listening: main.ts or a test decides where it runs. */
export function buildApi(deps: ApiDeps): FastifyInstance {
  const { config, redis } = deps;
  const metrics = createApiMetrics();
  registerRuntimeMetrics(metrics.registry, redis);
  const counting: StreamCounting = {
    metrics: createStreamMetrics(metrics.registry, config.api),
    streaming: new WeakSet(),
    ended: (request, seconds) =>
      metrics.observe(request.routeOptions.url ?? 'unmatched', request.method, 200, seconds),
  };
  // Answers the Node server writes below Fastify: logged without URL or headers, and counted.
  const refused = (code: TransportErrorCode, reason: string) => {
    // A flood of refused connections must not become a flood of log lines: those are counted.
    if (code === 'TOO_MANY_CONNECTIONS' || code === 'SERVER_BUSY') {
      deps.logger.debug({ error: code, reason }, 'refused before routing');
    } else {
      deps.logger.info({ error: code, reason }, 'refused before routing');
    }
    metrics.refused(code);
  };
  const app = Fastify({
    loggerInstance: deps.logger,
    bodyLimit: config.api.bodyLimitBytes,
    // The timeouts, connection and header limits live on the Node server it makes.
    serverFactory: (handler) => createEdgeServer(handler, config.api, refused, metrics.dropped),
    clientErrorHandler: createClientErrorHandler(refused),
    // Bad percent-encoding and overlong path parameters: the envelope, not Fastify's echo.
    frameworkErrors: createFrameworkErrorHandler(refused),
    // HEAD answers wherever GET does, with its headers and no body (RFC 9110 §9.3.2).
    exposeHeadRoutes: true,
    // A request arriving on a kept-alive connection after SIGTERM is answered (Fastify adds
    // `Connection: close`) instead of getting Fastify's own 503, outside the API's envelope.
    return503OnClosing: false,
    // Fastify's request lines built only when they are written (request-logging.ts).
    logController: requestLogController(deps.logger),
  });
  // First: the request spans must see every route declared below.
  deps.tracer?.register(app);
  // Callback style: no promise per request for a hook that never awaits. Traced, a sampled
  // request's latency keeps its span as the exemplar; untraced, the hook is as it ever was.
  const sampledSpan = deps.tracer?.sampledSpan;
  if (sampledSpan === undefined)
    app.addHook('onResponse', (request, reply, done) => {
      if (counting.streaming.has(request)) return done();
      const route = request.routeOptions.url ?? 'unmatched';
      metrics.observe(route, request.method, reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  else
    app.addHook('onResponse', (request, reply, done) => {
      if (counting.streaming.has(request)) return done();
      const route = request.routeOptions.url ?? 'unmatched';
      const seconds = reply.elapsedTime / 1000;
      const span = sampledSpan(request);
      if (span === undefined) metrics.observe(route, request.method, reply.statusCode, seconds);
      else metrics.observeSampled(route, request.method, reply.statusCode, seconds, span);
      done();
    });

  registerHttpErrors(app);
  decorateKeyHash(app);
  const clock = deps.clock ?? Date.now;
  // Reader (near-cache), streams and their change-feed subscriber; closed with the app.
  const side = createReadSide({
    config,
    redis,
    logger: deps.logger,
    clock,
    streamMetrics: counting.metrics,
    tracer: deps.tracer?.streams,
  });
  registerNearCacheMetrics(metrics.registry, side.cache);
  // Open streams end before the server closes: close() would otherwise wait for them forever.
  app.addHook('preClose', (done) => {
    side.streams.close();
    done();
  });
  // A request that arrived before close() and is answered after it ends its connection (Fastify
  // marks only those arriving later): kept alive, it would hold close() open until its timeout.
  // The streams' closing flag is set by preClose, so it says whether close() began.
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (side.streams.closing) reply.header('connection', 'close');
    done(null, payload);
  });
  app.addHook('onClose', () => side.close());
  const quotas =
    config.api.quotaRequestsPerMinute === 0
      ? null
      : createQuotas({
          redis,
          keys: createKeys(config.redis.keyPrefix),
          requestsPerMinute: config.api.quotaRequestsPerMinute,
          refused: createQuotaRefusals(metrics.registry),
        });
  if (quotas) app.addHook('onClose', () => quotas.close());
  const ctx: RouteContext = {
    reader: deps.tracer
      ? deps.tracer.reader(side.reader, config.api.nearCacheEntries > 0)
      : side.reader,
    clock,
    onlineWindowSeconds: config.ingest.onlineWindowSeconds,
    quotas,
  };
  app.register(
    async (api) => {
      // Form bodies only (read-api.md "Request method notes"); JSON or text bodies get 415.
      api.removeAllContentTypeParsers();
      await api.register(formbody);
      registerInstallationsRoute(api, ctx, createStreamCoders(config.api.compressedStreamsMax));
      registerDevicesRoute(api, ctx);
      registerEnergyFlowRoute(api, ctx);
      registerFlowStreamRoute(api, ctx, {
        streams: side.streams,
        limits: createStreamLimits({
          redis,
          keys: createKeys(config.redis.keyPrefix),
          perKey: config.api.streamsPerKey,
          perApplication: config.api.streamsPerApplication,
          perClient: config.api.maxConnectionsPerClient,
        }),
        trustedProxies: new Set(config.api.trustedProxies.map(clientOf)),
        counting,
      });
      registerBulkFlowRoute(api, ctx);
      registerOpenApiRoute(api, config.api.basePath);
    },
    { prefix: config.api.basePath },
  );
  registerOpsRoutes(app, { redis, metrics, keys: createKeys(config.redis.keyPrefix) });
  registerPlayground(app, config, () => counting.metrics.refused('playground-proxy'));
  return app;
}
