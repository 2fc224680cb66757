import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import type { TestProject } from 'vitest/node';
import { dropNegativeTimeoutWarning } from '../../consumers/kafka/negative-timeout.js';
import { type ContainerEngine, prepareContainerEngine } from './container-engine.js';
import { startContainerStack } from './container-stack.js';

// Integration, e2e and browser tests need a real Kafka and a real Redis. Order of preference:
// 1. KAFKA_BROKERS and REDIS_URL set: use them as they are;
// 2. TEST_STACK=containers: start both with testcontainers (container-stack.ts), stopped at the end;
// 3. otherwise start the project's own native stack (infra/stack.sh), which stays up for reruns;
//    TEST_KAFKA=cluster starts its three-broker Kafka instead of the single broker.
// Anything missing fails the run with how to fix it; nothing is skipped.

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string[];
    redisUrl: string;
    /** TEST_REDIS=cluster: the local Redis Cluster's nodes (REDIS_CLUSTER_NODES); else ''. */
    redisClusterNodes: string;
    /** Set when TEST_STACK=containers: the engine's settings, for tests that run images. */
    containerEngine: ContainerEngine | null;
    /** Kafka's log directory on this host; null for a Kafka given by KAFKA_BROKERS. */
    kafkaDataDir: string | null;
  }
}

const HOW_TO_FIX =
  'Start the project stack with `npm run stack:start` (needs Java 17, Maven and redis-server), ' +
  'or point the tests at running services with KAFKA_BROKERS=host:port and REDIS_URL=redis://host:port.';

interface Stack {
  brokers: string[];
  redisUrl: string;
  redisClusterNodes: string;
  engine: ContainerEngine | null;
  kafkaDataDir: string | null;
  stop(): Promise<void>;
}

// Several projects (system, browser) name this setup; they share one stack in this process, and
// the last teardown stops it.
const shared = globalThis as { readModelTestStack?: { refs: number; stack: Promise<Stack> } };

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  shared.readModelTestStack ??= { refs: 0, stack: startStack() };
  const entry = shared.readModelTestStack;
  entry.refs += 1;
  const teardown = async () => {
    entry.refs -= 1;
    if (entry.refs > 0) return;
    shared.readModelTestStack = undefined;
    await (await entry.stack.catch(() => null))?.stop();
  };
  try {
    const stack = await entry.stack;
    project.provide('kafkaBrokers', stack.brokers);
    project.provide('redisUrl', stack.redisUrl);
    project.provide('redisClusterNodes', stack.redisClusterNodes);
    project.provide('containerEngine', stack.engine);
    project.provide('kafkaDataDir', stack.kafkaDataDir);
  } catch (error) {
    await teardown();
    throw error;
  }
  return teardown;
}

async function startStack(): Promise<Stack> {
  const stack = await startServices();
  if (process.env.TEST_REDIS !== 'cluster') return stack;
  // The same suites on a 3-master / 3-replica cluster (infra/stack.sh), Kafka as above.
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const started = spawnSync('bash', [join(root, 'infra/stack.sh'), 'start', 'redis-cluster'], {
    stdio: 'inherit',
  });
  if (started.status !== 0) {
    throw new Error(
      'could not start the Redis Cluster: run `bash infra/stack.sh start redis-cluster` to see why (needs redis-server and redis-cli)',
    );
  }
  const base = Number(process.env.REDIS_CLUSTER_PORT_BASE ?? '17001');
  const nodes = [0, 1, 2, 3, 4, 5].map((i) => `127.0.0.1:${base + i}`).join(',');
  return { ...stack, redisClusterNodes: nodes };
}

async function startServices(): Promise<Stack> {
  const brokers = process.env.KAFKA_BROKERS?.split(',').map((b) => b.trim());
  const redisUrl = process.env.REDIS_URL;
  if (brokers && redisUrl) {
    return checked({
      brokers,
      redisUrl,
      redisClusterNodes: '',
      engine: null,
      kafkaDataDir: null,
      stop: async () => {},
    });
  }
  if (process.env.TEST_STACK === 'containers') {
    const engine = prepareContainerEngine();
    const containers = await startContainerStack(engine);
    return checked({ ...containers, redisClusterNodes: '', engine }).catch(async (error) => {
      await containers.stop();
      throw error;
    });
  }
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const script = join(root, 'infra/stack.sh');
  // TEST_KAFKA=cluster: three replicated brokers (infra/stack.sh start kafka-cluster) instead
  // of the single one, as production runs Kafka; Redis as configured.
  const kafkaCluster = process.env.TEST_KAFKA === 'cluster';
  const started = spawnSync('bash', [script, 'start', ...(kafkaCluster ? ['redis'] : [])], {
    stdio: 'inherit',
  });
  if (started.status !== 0) throw new Error(`could not start Kafka and Redis. ${HOW_TO_FIX}`);
  if (
    kafkaCluster &&
    spawnSync('bash', [script, 'start', 'kafka-cluster'], { stdio: 'inherit' }).status !== 0
  ) {
    throw new Error(
      'could not start the three-broker Kafka: run `bash infra/stack.sh start kafka-cluster` to see why',
    );
  }
  // Same defaults and overrides as infra/stack.sh.
  const clusterBase = Number(process.env.KAFKA_CLUSTER_PORT_BASE ?? '19111');
  return checked({
    brokers: kafkaCluster
      ? [0, 2, 4].map((i) => `127.0.0.1:${clusterBase + i}`)
      : [`127.0.0.1:${process.env.KAFKA_PORT ?? '19092'}`],
    redisUrl: `redis://127.0.0.1:${process.env.REDIS_PORT ?? '16379'}`,
    redisClusterNodes: '',
    engine: null,
    // A segment is corrupted on one broker's disk only where there is one broker.
    kafkaDataDir: kafkaCluster
      ? null
      : join(process.env.STACK_DIR ?? join(root, '.local'), 'kafka', 'data'),
    stop: async () => {},
  });
}

async function checked(stack: Stack): Promise<Stack> {
  await checkRedis(stack.redisUrl);
  await checkKafka(stack.brokers);
  return stack;
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
  dropNegativeTimeoutWarning();
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
