import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../src/config.js';
import { createKeys } from '../src/read-model/keys.js';
import type { RedisClient } from '../src/read-model/redis-connection.js';
import { createChangeSubscriber } from './change-feed/change-subscriber.js';
import { watchEpoch } from './change-feed/epoch-watch.js';
import { cachedReader } from './near-cache/cached-reader.js';
import { createNearCache, type NearCache } from './near-cache/near-cache.js';
import type { StreamMetrics } from './ops/stream-metrics.js';
import { type ApiReader, createApiReader } from './reader/api-reader.js';
import { createKeyAccess, type KeyAccess } from './reader/key-access.js';
import { createViewCache } from './reader/view-cache.js';
import { createApiReplicaRedis } from './redis-client.js';
import { createFlowStreams, type FlowStreams } from './streams/flow-streams.js';
import type { StreamTracer } from './tracing/api-tracer.js';

// The API's read side in one place: the reader the routes use (through the near-cache unless
// API_NEAR_CACHE_ENTRIES=0), and the open streams; both ride the one change subscriber, whose
// connection opens on first use.

// First pages of getInstallations kept, one per application and page size. An entry of 200
// installations holds ~55 KB (the reply's bytes and the ~27 KB body), more once a compressed
// variant was asked for; most applications hold far fewer installations.
const VIEW_PAGES_KEPT = 10_000;

export interface ReadSide {
  readonly reader: ApiReader;
  readonly access: KeyAccess;
  readonly cache: NearCache;
  readonly streams: FlowStreams;
  close(): Promise<void>;
}

export function createReadSide(deps: {
  config: Config;
  redis: RedisClient;
  logger: FastifyBaseLogger;
  clock: () => number;
  streamMetrics: StreamMetrics;
  /** Spans of the streams' pushes caused by traced writes; absent, tracing is off. */
  tracer?: StreamTracer;
}): ReadSide {
  const { api } = deps.config;
  const keys = createKeys(deps.config.redis.keyPrefix);
  const access = createKeyAccess({ redis: deps.redis, keys, maxAgeMs: api.nearCacheMaxAgeMs });
  // Replicas (when on) serve only the reads nothing keeps: what the near-cache keeps is read
  // from masters, in the order of their announcements, and key statuses always are.
  const replica = createApiReplicaRedis(deps.config);
  replica?.on('error', (error: Error) =>
    deps.logger.warn({ err: { message: error.message } }, 'redis replica error'),
  );
  const base = createApiReader(deps.redis, keys, access, replica);
  const subscriber = createChangeSubscriber({
    redis: deps.redis,
    keys,
    traceContext: deps.tracer !== undefined,
  });
  // Created before the streams: on an announcement the entry is dropped before they re-read.
  const cache = createNearCache({
    redis: deps.redis,
    keys,
    subscriber,
    entries: api.nearCacheEntries,
    maxAgeMs: api.nearCacheMaxAgeMs,
    maxBytes: api.nearCacheMaxBytes,
    windowLookups: api.nearCacheWindowLookups,
    reads: base,
  });
  const streams = createFlowStreams({
    subscriber,
    access,
    cache,
    clock: deps.clock,
    onlineWindowSeconds: deps.config.ingest.onlineWindowSeconds,
    maxStreams: api.maxStreams,
    heartbeatMs: api.streamHeartbeatMs,
    logger: deps.logger,
    metrics: deps.streamMetrics,
    tracer: deps.tracer,
  });
  const views = createViewCache({ redis: deps.redis, keys, access, entries: VIEW_PAGES_KEPT });
  subscriber.on('reset', () => views.clear());
  // A rebuild deletes without announcing: caches and streams then re-read.
  const epoch = watchEpoch({
    redis: deps.redis,
    keys,
    onChange: () => {
      access.clear();
      subscriber.invalidate();
    },
  });
  return {
    reader: api.nearCacheEntries === 0 ? base : cachedReader(base, access, cache, views),
    access,
    cache,
    streams,
    async close() {
      streams.close();
      cache.clear();
      views.clear();
      await Promise.all([subscriber.close(), epoch.stop(), access.close()]);
      if (replica) await replica.quit().catch(() => replica.disconnect());
    },
  };
}
