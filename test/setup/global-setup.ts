import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import type { TestProject } from 'vitest/node';

// Integration and e2e tests need a real Kafka and a real Redis. Order of preference:
// 1. KAFKA_BROKERS and REDIS_URL set: use them as they are;
// 2. otherwise start the project's own native stack (infra/stack.sh), which stays up for reruns.
// Anything missing fails the run with how to fix it; nothing is skipped.

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string[];
    redisUrl: string;
  }
}

const HOW_TO_FIX =
  'Start the project stack with `npm run stack:start` (needs Java 17, Maven and redis-server), ' +
  'or point the tests at running services with KAFKA_BROKERS=host:port and REDIS_URL=redis://host:port.';

export default async function setup(project: TestProject): Promise<void> {
  let brokers = process.env.KAFKA_BROKERS?.split(',').map((b) => b.trim());
  let redisUrl = process.env.REDIS_URL;
  if (!brokers || !redisUrl) {
    const script = fileURLToPath(new URL('../../infra/stack.sh', import.meta.url));
    const started = spawnSync('bash', [script, 'start'], { stdio: 'inherit' });
    if (started.status !== 0) throw new Error(`could not start Kafka and Redis. ${HOW_TO_FIX}`);
    // Same defaults and overrides as infra/stack.sh.
    brokers = [`127.0.0.1:${process.env.KAFKA_PORT ?? '19092'}`];
    redisUrl = `redis://127.0.0.1:${process.env.REDIS_PORT ?? '16379'}`;
  }
  await checkRedis(redisUrl);
  await checkKafka(brokers);
  project.provide('kafkaBrokers', brokers);
  project.provide('redisUrl', redisUrl);
}

async function checkRedis(url: string): Promise<void> {
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
  });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    throw new Error(`Redis at ${url} is not reachable (${String(error)}). ${HOW_TO_FIX}`);
  } finally {
    redis.disconnect();
  }
}

/** A freshly started broker opens its port before its controller is ready: poll until it answers. */
async function checkKafka(brokers: string[]): Promise<void> {
  const kafka = new Kafka({ brokers, logLevel: logLevel.NOTHING, retry: { retries: 0 } });
  const deadline = Date.now() + 60_000;
  let lastError: unknown;
  while (Date.now() < deadline) {
    const admin = kafka.admin();
    try {
      await admin.connect();
      await admin.describeCluster();
      return;
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    } finally {
      await admin.disconnect().catch(() => undefined);
    }
  }
  throw new Error(
    `Kafka at ${brokers.join(',')} is not ready (${String(lastError)}). ${HOW_TO_FIX}`,
  );
}
