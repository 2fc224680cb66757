import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import type { KafkaClient } from '../../consumers/kafka/client.js';
import { createKafkajsClient } from '../../consumers/kafka/kafkajs-client.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import {
  connectRedis,
  isCluster,
  type RedisClient,
  scanKeys,
} from '../../src/read-model/redis-connection.js';

// Quiet by default; TEST_LOG_LEVEL=debug shows what the clients did.
export const testLogger = createLogger({
  level: process.env.TEST_LOG_LEVEL ?? 'silent',
  name: 'test',
});

/** A short random id: every test gets its own topics, consumer groups and Redis key prefix. */
export const uniqueId = (label: string): string => `${label}-${randomBytes(4).toString('hex')}`;

/**
 * Environment for a process under test that shares the stack but nothing else: its own topics,
 * consumer group and Redis key prefix, all derived from `id`.
 */
export function isolatedEnv(id: string): Record<string, string> {
  return {
    KAFKA_BROKERS: kafkaBrokers().join(','),
    REDIS_URL: redisUrl(),
    REDIS_CLUSTER_NODES: redisClusterNodes(),
    REDIS_KEY_PREFIX: `${id}:`,
    TOPIC_INSTALLATIONS: `${id}-installations`,
    TOPIC_TELEMETRY: `${id}-telemetry`,
    TOPIC_ACCESS: `${id}-access`,
    TOPIC_DEADLETTER: `${id}-deadletter`,
    CONSUMER_GROUP: `${id}-group`,
    CONSUMER_FLOW_SWEEP_MS: '200',
    LOG_LEVEL: 'silent',
  };
}

export function kafkaBrokers(): string[] {
  return inject('kafkaBrokers');
}

export function redisUrl(): string {
  return inject('redisUrl');
}

/** The Redis Cluster the suite runs on (TEST_REDIS=cluster), as REDIS_CLUSTER_NODES; else ''. */
export function redisClusterNodes(): string {
  return inject('redisClusterNodes');
}

export function testKafkaClient(): KafkaClient {
  return createKafkajsClient({
    brokers: kafkaBrokers(),
    clientId: uniqueId('test'),
    logger: testLogger,
  });
}

/** A connection to the suite's read model: the cluster when there is one, unless `single`. */
export function testRedis(options: { single?: boolean } = {}): RedisClient {
  const { redis } = loadConfig({
    REDIS_URL: redisUrl(),
    REDIS_CLUSTER_NODES: options.single ? '' : redisClusterNodes(),
  });
  return connectRedis(redis, { maxRetriesPerRequest: 3 });
}

/** Polls until `probe` returns a value other than undefined, or fails after the deadline. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`,
  );
}

/**
 * Now rounded up to a whole second. Last-seen times are kept and judged in whole seconds, so a
 * device seen at `Date.now()` is online for only what the truncation leaves of the window (1-2 s
 * of a 2 s one), too little on a busy machine; seen at this time, it is online for the whole
 * window from now (a future time within the accepted skew).
 */
export const nextWholeSecond = (): number => Math.ceil(Date.now() / 1000) * 1000;

/** Deletes every key under a test's prefix. */
export async function dropPrefix(redis: RedisClient, prefix: string): Promise<void> {
  // After a failover the client's map of masters may be one refresh behind (a restarted node
  // briefly announcing its old role; the node a scan runs on replaced mid-scan): map again,
  // then scan again. Deleting is idempotent.
  for (let attempt = 1; ; attempt++) {
    try {
      // One key per command: on a cluster, keys of one page live in many slots.
      for await (const keys of scanKeys(redis, `${prefix}*`))
        await Promise.all(keys.map((key) => redis.unlink(key)));
      return;
    } catch (error) {
      if (!isCluster(redis) || attempt === 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
      await new Promise((resolve) => redis.refreshSlotsCache(() => resolve(undefined)));
    }
  }
}
