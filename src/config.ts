import { isIP } from 'node:net';
import { z } from 'zod';

// The only module that reads process.env: every process parses it once and passes slices down.
const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();

const envSchema = z.object({
  KAFKA_BROKERS: z.string().min(1).default('127.0.0.1:19092'),
  KAFKA_CLIENT_ID: z.string().min(1).default('read-model'),
  REDIS_URL: z.string().url().default('redis://127.0.0.1:16379'),
  REDIS_KEY_PREFIX: z.string().default('rm:'),
  // host:port,… of Redis Cluster nodes: set, every process uses the cluster (REDIS_URL then
  // only lends its credentials); empty, the one Redis at REDIS_URL.
  REDIS_CLUSTER_NODES: z
    .string()
    .default('')
    .refine(
      (v) => v.trim() === '' || v.split(',').every((n) => /^[^\s:]+:\d{1,5}$/.test(n.trim())),
      'host:port,host:port,…',
    ),
  TOPIC_INSTALLATIONS: z.string().min(1).default('installations.v1'),
  TOPIC_TELEMETRY: z.string().min(1).default('device-telemetry.v1'),
  TOPIC_ACCESS: z.string().min(1).default('access-changes.v1'),
  TOPIC_DEADLETTER: z.string().min(1).default('ingest-deadletter.v1'),
  CONSUMER_GROUP: z.string().min(1).default('read-model-projector'),
  // A Confluent-compatible schema registry (Apicurio's /apis/ccompat/v7): set, registry-framed
  // values on the installations and telemetry topics are decoded; unset, every value is JSON.
  SCHEMA_REGISTRY_URL: z.string().url().optional(),
  SCHEMA_REGISTRY_TIMEOUT_MS: positiveInt.default(2_000),
  CONSUMER_HEALTH_PORT: port.default(9464),
  CONSUMER_HEALTH_HOST: z.string().min(1).default('127.0.0.1'),
  CONSUMER_FLOW_SWEEP_MS: positiveInt.default(1_000),
  CONSUMER_MAX_RETRY_DELAY_MS: positiveInt.default(5_000),
  CONSUMER_WAIT_REPLICAS: z.coerce.number().int().min(0).default(0),
  CONSUMER_WAIT_TIMEOUT_MS: positiveInt.default(1_000),
  CONSUMER_TELEMETRY_CONCURRENCY: positiveInt.default(6),
  CONSUMER_STATE_INSTALLATIONS_PER_PARTITION: positiveInt.default(50_000),
  CONSUMER_FATAL_EXIT_GRACE_MS: positiveInt.default(5_000),
  CONSUMER_REJOIN_TIMEOUT_MS: positiveInt.default(60_000),
  CONSUMER_LAG_INTERVAL_MS: positiveInt.default(5_000),
  // The broker's group.min.session.timeout.ms is 6 s by default; below that joins are refused.
  CONSUMER_SESSION_TIMEOUT_MS: z.coerce.number().int().min(6_000).default(10_000),
  ONLINE_WINDOW_SECONDS: positiveInt.default(300),
  FUTURE_SKEW_SECONDS: positiveInt.default(300),
  API_HOST: z.string().min(1).default('127.0.0.1'),
  API_PORT: port.default(8080),
  // A listener of its own for /healthz, /readyz and /metrics, which a flood of the API port
  // cannot reach; unset: off (the API port serves them too, either way).
  API_OPS_HOST: z.string().min(1).default('127.0.0.1'),
  API_OPS_PORT: port.optional(),
  API_BASE_PATH: z
    .string()
    .regex(/^\/[A-Za-z0-9/_-]*[A-Za-z0-9_-]$/, 'must start with / and not end with /')
    .default('/application/v1'),
  API_REQUEST_TIMEOUT_MS: positiveInt.default(5_000),
  API_HEADERS_TIMEOUT_MS: positiveInt.default(3_000), // capped at API_REQUEST_TIMEOUT_MS
  API_KEEP_ALIVE_TIMEOUT_MS: positiveInt.default(5_000),
  // docs/security.md, "Connections": shared fairly at the limit; a client holds at most its cap.
  API_MAX_CONNECTIONS: positiveInt.default(4_096),
  API_MAX_CONNECTIONS_PER_CLIENT: z.coerce.number().int().min(0).default(512), // 0: no cap
  // Reverse proxies whose X-Forwarded-For names the client: comma-separated IP addresses.
  API_TRUSTED_PROXIES: z
    .string()
    .default('')
    .refine(
      (v) => v.split(',').every((a) => a.trim() === '' || isIP(a.trim()) !== 0),
      'IP addresses, comma-separated',
    ),
  // Nothing read or written for this long: closed. Above API_STREAM_HEARTBEAT_MS, or idle
  // streams would be cut between heartbeats.
  API_SOCKET_IDLE_TIMEOUT_MS: positiveInt.default(30_000),
  API_MAX_HEADER_BYTES: positiveInt.default(16 * 1024), // 16 KiB, Node's default
  API_MAX_REQUESTS_PER_SOCKET: z.coerce.number().int().min(0).default(0), // 0: no limit
  API_BODY_LIMIT_BYTES: positiveInt.default(16 * 1024), // 16 KiB: form bodies carry one id
  API_REDIS_COMMAND_TIMEOUT_MS: positiveInt.default(1_000),
  // Reads that keep nothing (the near-cache's misses, every read with it off) from replicas: a
  // cluster's (scaleReads), or the one at API_REDIS_REPLICA_URL beside a single Redis.
  API_REDIS_READ_REPLICAS: z.enum(['false', 'true']).default('false'),
  API_REDIS_REPLICA_URL: z.string().url().optional(),
  API_DOCS_UPSTREAM_URL: z.string().url().optional(), // default: the API itself
  API_DOCS_PROXY_TIMEOUT_MS: positiveInt.default(5_000),
  // The playground proxy's own upstream pool and the streams it relays at once (docs/security.md).
  API_DOCS_PROXY_CONNECTIONS: positiveInt.default(32),
  API_DOCS_PROXY_STREAMS: positiveInt.default(16),
  API_QUOTA_REQUESTS_PER_MINUTE: z.coerce.number().int().min(0).default(0), // 0: quotas off
  API_NEAR_CACHE_ENTRIES: z.coerce.number().int().min(0).default(10_000), // 0: near-cache off
  API_NEAR_CACHE_MAX_AGE_MS: positiveInt.default(60_000),
  API_NEAR_CACHE_MAX_BYTES: positiveInt.default(256 * 1024 * 1024), // 256 MiB
  API_NEAR_CACHE_WINDOW_LOOKUPS: positiveInt.default(4_096),
  // Per API process: half the connections, so streams never hold them all.
  API_STREAMS_MAX: z.coerce.number().int().min(0).default(2_048),
  API_STREAMS_PER_KEY: positiveInt.default(256), // per API process
  API_STREAMS_PER_APPLICATION: positiveInt.default(1_024), // per API process
  // Streamed lists compressed at once per process; past it they go out as identity.
  API_COMPRESSED_STREAMS_MAX: positiveInt.default(4),
  API_STREAM_HEARTBEAT_MS: positiveInt.max(15_000).default(10_000), // beyond.md: at least every 15 s
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Env = Record<string, string | undefined>;

export interface Config {
  readonly kafka: { readonly brokers: readonly string[]; readonly clientId: string };
  readonly redis: {
    readonly url: string;
    readonly keyPrefix: string;
    /** Redis Cluster seed nodes; empty for a single Redis. */
    readonly clusterNodes: readonly { readonly host: string; readonly port: number }[];
  };
  readonly topics: {
    readonly installations: string;
    readonly telemetry: string;
    readonly access: string;
    readonly deadletter: string;
  };
  /** Where writer schemas are read by id; url null: no registry, values are JSON only. */
  readonly schemaRegistry: { readonly url: string | null; readonly timeoutMs: number };
  readonly consumer: {
    readonly groupId: string;
    readonly healthPort: number;
    readonly healthHost: string;
    /** How often the ageing timer looks for flows whose validUntil has passed. */
    readonly flowSweepMs: number;
    /**
     * Replicas of each master a batch's writes must reach (Redis WAIT) before its offsets are
     * committed; 0: the master's acknowledgment (its AOF) is enough.
     */
    readonly waitReplicas: number;
    readonly waitTimeoutMs: number;
    /** Upper bound of the backoff while Redis is unreachable. */
    readonly maxRetryDelayMs: number;
    /** Telemetry partition batches projected at once, each on a Redis connection of its own. */
    readonly telemetryConcurrency: number;
    /** Installations a telemetry partition owner keeps in memory (least recently used go first). */
    readonly stateInstallationsPerPartition: number;
    /** A consumer stopped for good: readiness false at once, process exit after this long. */
    readonly fatalExitGraceMs: number;
    /** A crashed consumer that the client restarts must be back in its group within this. */
    readonly rejoinTimeoutMs: number;
    /** How often lag is read from the broker (also at every assignment). */
    readonly lagIntervalMs: number;
    /** A crashed member's partitions wait this long before the group hands them on. */
    readonly sessionTimeoutMs: number;
  };
  readonly ingest: { readonly onlineWindowSeconds: number; readonly futureSkewSeconds: number };
  readonly api: {
    readonly host: string;
    readonly port: number;
    /** The ops listener (probes and metrics only); port null: off. */
    readonly ops: { readonly host: string; readonly port: number | null };
    readonly basePath: string;
    readonly requestTimeoutMs: number;
    /** Request line and headers must arrive within this; the whole request within requestTimeoutMs. */
    readonly headersTimeoutMs: number;
    readonly keepAliveTimeoutMs: number;
    readonly maxConnections: number;
    /** Per client (IPv4 address, IPv6 /64); 0 = no cap beyond the fair share at the limit. */
    readonly maxConnectionsPerClient: number;
    /** Proxy addresses: their connections are not capped per client; streams count per forwarded client. */
    readonly trustedProxies: readonly string[];
    /** A connection with nothing read or written for this long is closed (a client not reading). */
    readonly socketIdleTimeoutMs: number;
    readonly maxHeaderBytes: number;
    /** 0: no limit. */
    readonly maxRequestsPerSocket: number;
    readonly bodyLimitBytes: number;
    readonly redisCommandTimeoutMs: number;
    /** Reads that keep nothing go to replicas (API_REDIS_READ_REPLICAS). */
    readonly readReplicas: boolean;
    /** The replica of a single Redis those reads go to; null on a cluster. */
    readonly replicaUrl: string | null;
    /** Where the docs playground's proxy sends try-it requests; null = this API itself. */
    readonly docsUpstreamUrl: string | null;
    /** Until the upstream's headers; for a JSON answer, until its body too. */
    readonly docsProxyTimeoutMs: number;
    /** Connections the proxy holds to its upstream at most. */
    readonly docsProxyConnections: number;
    /** Streams the proxy relays at once, all keys together. */
    readonly docsProxyStreams: number;
    /** Default budget per application and minute; 0 = quotas off (beyond.md §6). */
    readonly quotaRequestsPerMinute: number;
    /** Installations the in-process near-cache holds (api/near-cache/); 0 = off. */
    readonly nearCacheEntries: number;
    /** An entry older than this is re-read even without an announcement. */
    readonly nearCacheMaxAgeMs: number;
    /** Bytes the near-cache's entries hold at most, approximately. */
    readonly nearCacheMaxBytes: number;
    /** Lookups over which the near-cache judges whether it pays (api/near-cache/worth.ts). */
    readonly nearCacheWindowLookups: number;
    /** Open Server-Sent Events streams per API process; over it, TOO_MANY_STREAMS. */
    readonly maxStreams: number;
    /** Open streams per key, per application and per client in this process; over it, 429. */
    readonly streamsPerKey: number;
    readonly streamsPerApplication: number;
    /** Streamed getInstallations answers compressed at once; past it, identity. */
    readonly compressedStreamsMax: number;
    /** How often an open stream gets a comment line. */
    readonly streamHeartbeatMs: number;
  };
  readonly logLevel: string;
}

export class ConfigError extends Error {}

/** Parses the environment once; empty strings count as unset so `FOO=` falls back to defaults. */
export function loadConfig(env: Env = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== ''));
  const parsed = envSchema.safeParse(cleaned);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${issues.join('; ')}`);
  }
  const e = parsed.data;
  if (
    e.API_REDIS_READ_REPLICAS === 'true' &&
    e.REDIS_CLUSTER_NODES.trim() === '' &&
    !e.API_REDIS_REPLICA_URL
  ) {
    throw new ConfigError(
      'invalid configuration: API_REDIS_READ_REPLICAS=true on a single Redis needs API_REDIS_REPLICA_URL',
    );
  }
  return deepFreeze({
    kafka: {
      brokers: e.KAFKA_BROKERS.split(',').map((b) => b.trim()),
      clientId: e.KAFKA_CLIENT_ID,
    },
    redis: {
      url: e.REDIS_URL,
      keyPrefix: e.REDIS_KEY_PREFIX,
      clusterNodes: e.REDIS_CLUSTER_NODES.split(',')
        .map((n) => n.trim())
        .filter((n) => n !== '')
        .map((n) => {
          const at = n.lastIndexOf(':');
          return { host: n.slice(0, at), port: Number(n.slice(at + 1)) };
        }),
    },
    topics: {
      installations: e.TOPIC_INSTALLATIONS,
      telemetry: e.TOPIC_TELEMETRY,
      access: e.TOPIC_ACCESS,
      deadletter: e.TOPIC_DEADLETTER,
    },
    schemaRegistry: {
      url: e.SCHEMA_REGISTRY_URL ?? null,
      timeoutMs: e.SCHEMA_REGISTRY_TIMEOUT_MS,
    },
    consumer: {
      groupId: e.CONSUMER_GROUP,
      healthPort: e.CONSUMER_HEALTH_PORT,
      healthHost: e.CONSUMER_HEALTH_HOST,
      flowSweepMs: e.CONSUMER_FLOW_SWEEP_MS,
      maxRetryDelayMs: e.CONSUMER_MAX_RETRY_DELAY_MS,
      waitReplicas: e.CONSUMER_WAIT_REPLICAS,
      waitTimeoutMs: e.CONSUMER_WAIT_TIMEOUT_MS,
      telemetryConcurrency: e.CONSUMER_TELEMETRY_CONCURRENCY,
      stateInstallationsPerPartition: e.CONSUMER_STATE_INSTALLATIONS_PER_PARTITION,
      fatalExitGraceMs: e.CONSUMER_FATAL_EXIT_GRACE_MS,
      rejoinTimeoutMs: e.CONSUMER_REJOIN_TIMEOUT_MS,
      lagIntervalMs: e.CONSUMER_LAG_INTERVAL_MS,
      sessionTimeoutMs: e.CONSUMER_SESSION_TIMEOUT_MS,
    },
    ingest: {
      onlineWindowSeconds: e.ONLINE_WINDOW_SECONDS,
      futureSkewSeconds: e.FUTURE_SKEW_SECONDS,
    },
    api: {
      host: e.API_HOST,
      port: e.API_PORT,
      ops: { host: e.API_OPS_HOST, port: e.API_OPS_PORT ?? null },
      basePath: e.API_BASE_PATH,
      requestTimeoutMs: e.API_REQUEST_TIMEOUT_MS,
      // Never longer than the whole request may take (Node refuses that combination).
      headersTimeoutMs: Math.min(e.API_HEADERS_TIMEOUT_MS, e.API_REQUEST_TIMEOUT_MS),
      keepAliveTimeoutMs: e.API_KEEP_ALIVE_TIMEOUT_MS,
      maxConnections: e.API_MAX_CONNECTIONS,
      maxConnectionsPerClient: e.API_MAX_CONNECTIONS_PER_CLIENT,
      trustedProxies: e.API_TRUSTED_PROXIES.split(',')
        .map((a) => a.trim())
        .filter((a) => a !== ''),
      socketIdleTimeoutMs: e.API_SOCKET_IDLE_TIMEOUT_MS,
      maxHeaderBytes: e.API_MAX_HEADER_BYTES,
      maxRequestsPerSocket: e.API_MAX_REQUESTS_PER_SOCKET,
      bodyLimitBytes: e.API_BODY_LIMIT_BYTES,
      redisCommandTimeoutMs: e.API_REDIS_COMMAND_TIMEOUT_MS,
      readReplicas: e.API_REDIS_READ_REPLICAS === 'true',
      replicaUrl: e.API_REDIS_REPLICA_URL ?? null,
      docsUpstreamUrl: e.API_DOCS_UPSTREAM_URL ?? null,
      docsProxyTimeoutMs: e.API_DOCS_PROXY_TIMEOUT_MS,
      docsProxyConnections: e.API_DOCS_PROXY_CONNECTIONS,
      docsProxyStreams: e.API_DOCS_PROXY_STREAMS,
      quotaRequestsPerMinute: e.API_QUOTA_REQUESTS_PER_MINUTE,
      nearCacheEntries: e.API_NEAR_CACHE_ENTRIES,
      nearCacheMaxAgeMs: e.API_NEAR_CACHE_MAX_AGE_MS,
      nearCacheMaxBytes: e.API_NEAR_CACHE_MAX_BYTES,
      nearCacheWindowLookups: e.API_NEAR_CACHE_WINDOW_LOOKUPS,
      maxStreams: e.API_STREAMS_MAX,
      streamsPerKey: e.API_STREAMS_PER_KEY,
      streamsPerApplication: e.API_STREAMS_PER_APPLICATION,
      compressedStreamsMax: e.API_COMPRESSED_STREAMS_MAX,
      streamHeartbeatMs: e.API_STREAM_HEARTBEAT_MS,
    },
    logLevel: e.LOG_LEVEL,
  });
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
