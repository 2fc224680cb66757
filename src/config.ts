import { z } from 'zod';

// The only module that reads process.env: every process parses it once and passes slices down.
const port = z.coerce.number().int().min(0).max(65535);
const positiveInt = z.coerce.number().int().positive();

const envSchema = z.object({
  KAFKA_BROKERS: z.string().min(1).default('127.0.0.1:19092'),
  KAFKA_CLIENT_ID: z.string().min(1).default('read-model'),
  REDIS_URL: z.string().url().default('redis://127.0.0.1:16379'),
  REDIS_KEY_PREFIX: z.string().default('rm:'),
  TOPIC_INSTALLATIONS: z.string().min(1).default('installations.v1'),
  TOPIC_TELEMETRY: z.string().min(1).default('device-telemetry.v1'),
  TOPIC_ACCESS: z.string().min(1).default('access-changes.v1'),
  TOPIC_DEADLETTER: z.string().min(1).default('ingest-deadletter.v1'),
  CONSUMER_GROUP: z.string().min(1).default('read-model-projector'),
  CONSUMER_HEALTH_PORT: port.default(9464),
  CONSUMER_FLOW_SWEEP_MS: positiveInt.default(1_000),
  CONSUMER_MAX_RETRY_DELAY_MS: positiveInt.default(5_000),
  CONSUMER_TELEMETRY_CONCURRENCY: positiveInt.default(6),
  ONLINE_WINDOW_SECONDS: positiveInt.default(300),
  FUTURE_SKEW_SECONDS: positiveInt.default(300),
  API_HOST: z.string().min(1).default('127.0.0.1'),
  API_PORT: port.default(8080),
  API_BASE_PATH: z
    .string()
    .regex(/^\/[A-Za-z0-9/_-]*[A-Za-z0-9_-]$/, 'must start with / and not end with /')
    .default('/application/v1'),
  API_REQUEST_TIMEOUT_MS: positiveInt.default(5_000),
  API_BODY_LIMIT_BYTES: positiveInt.default(16 * 1024), // 16 KiB: form bodies carry one id
  API_REDIS_COMMAND_TIMEOUT_MS: positiveInt.default(1_000),
  API_DOCS_UPSTREAM_URL: z.string().url().optional(), // default: the API itself
  API_DOCS_PROXY_TIMEOUT_MS: positiveInt.default(5_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Env = Record<string, string | undefined>;

export interface Config {
  readonly kafka: { readonly brokers: readonly string[]; readonly clientId: string };
  readonly redis: { readonly url: string; readonly keyPrefix: string };
  readonly topics: {
    readonly installations: string;
    readonly telemetry: string;
    readonly access: string;
    readonly deadletter: string;
  };
  readonly consumer: {
    readonly groupId: string;
    readonly healthPort: number;
    /** How often the ageing timer looks for flows whose validUntil has passed. */
    readonly flowSweepMs: number;
    /** Upper bound of the backoff while Redis is unreachable. */
    readonly maxRetryDelayMs: number;
    /** Telemetry partition batches projected at once, each on a Redis connection of its own. */
    readonly telemetryConcurrency: number;
  };
  readonly ingest: { readonly onlineWindowSeconds: number; readonly futureSkewSeconds: number };
  readonly api: {
    readonly host: string;
    readonly port: number;
    readonly basePath: string;
    readonly requestTimeoutMs: number;
    readonly bodyLimitBytes: number;
    readonly redisCommandTimeoutMs: number;
    /** Where the docs playground's proxy sends try-it requests; null = this API itself. */
    readonly docsUpstreamUrl: string | null;
    readonly docsProxyTimeoutMs: number;
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
  return deepFreeze({
    kafka: {
      brokers: e.KAFKA_BROKERS.split(',').map((b) => b.trim()),
      clientId: e.KAFKA_CLIENT_ID,
    },
    redis: { url: e.REDIS_URL, keyPrefix: e.REDIS_KEY_PREFIX },
    topics: {
      installations: e.TOPIC_INSTALLATIONS,
      telemetry: e.TOPIC_TELEMETRY,
      access: e.TOPIC_ACCESS,
      deadletter: e.TOPIC_DEADLETTER,
    },
    consumer: {
      groupId: e.CONSUMER_GROUP,
      healthPort: e.CONSUMER_HEALTH_PORT,
      flowSweepMs: e.CONSUMER_FLOW_SWEEP_MS,
      maxRetryDelayMs: e.CONSUMER_MAX_RETRY_DELAY_MS,
      telemetryConcurrency: e.CONSUMER_TELEMETRY_CONCURRENCY,
    },
    ingest: {
      onlineWindowSeconds: e.ONLINE_WINDOW_SECONDS,
      futureSkewSeconds: e.FUTURE_SKEW_SECONDS,
    },
    api: {
      host: e.API_HOST,
      port: e.API_PORT,
      basePath: e.API_BASE_PATH,
      requestTimeoutMs: e.API_REQUEST_TIMEOUT_MS,
      bodyLimitBytes: e.API_BODY_LIMIT_BYTES,
      redisCommandTimeoutMs: e.API_REDIS_COMMAND_TIMEOUT_MS,
      docsUpstreamUrl: e.API_DOCS_UPSTREAM_URL ?? null,
      docsProxyTimeoutMs: e.API_DOCS_PROXY_TIMEOUT_MS,
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
