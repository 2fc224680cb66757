import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { type Admin, Kafka, logLevel, type Producer } from 'kafkajs';
import { pino } from 'pino';
import { createKafkajsClient } from '../../consumers/kafka/kafkajs-client.js';
import { dropNegativeTimeoutWarning } from '../../consumers/kafka/negative-timeout.js';
import { type RedisClient, scanKeys } from '../../src/read-model/redis-connection.js';
import { ROOT } from './processes.js';

// The project's Kafka (127.0.0.1:19092) and Redis (127.0.0.1:16379), or the ports infra/stack.sh
// was given (KAFKA_PORT, REDIS_PORT); bench/run.ts starts them with infra/stack.sh when they are
// not running, a standalone case expects them. The bench only ever touches its own key prefix
// and topics.

export const KAFKA_BROKERS =
  process.env.BENCH_KAFKA_BROKERS ?? `127.0.0.1:${process.env.KAFKA_PORT ?? '19092'}`;
export const REDIS_URL =
  process.env.BENCH_REDIS_URL ?? `redis://127.0.0.1:${process.env.REDIS_PORT ?? '16379'}`;

/** The API's base path, as the bench's API processes and servers serve it. */
export const BASE_PATH = '/application/v1';

export function ensureStack(): void {
  execFileSync('bash', ['infra/stack.sh', 'start'], { cwd: ROOT, stdio: 'inherit' });
}

const HOW_TO_START =
  'start the stack with `npm run stack:start` (KAFKA_PORT and REDIS_PORT choose its ports), ' +
  'or point the bench at running services with BENCH_KAFKA_BROKERS=host:port and ' +
  'BENCH_REDIS_URL=redis://host:port';

/** A case started without the stack: one line that says how to start it, exit 1, no dump. */
function stackMissing(what: string, where: string, reason: string): never {
  process.stderr.write(
    `bench: ${what} at ${where} is not reachable (${reason}): ${HOW_TO_START}\n`,
  );
  process.exit(1);
}

/** The address without its credentials, for that line. */
const address = (url: string) => {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  } catch {
    return '(unparsable REDIS_URL)';
  }
};

/**
 * Exits with stackMissing when the client's first connection fails, instead of ioredis's
 * retrying and printing an unhandled error event per attempt, then a MaxRetriesPerRequestError
 * stack. Once connected, errors are the case's own.
 */
export function exitUnlessConnects<C extends NodeJS.EventEmitter>(redis: C, url: string): C {
  const fail = (error: Error) => stackMissing('Redis', address(url), error.message);
  redis.once('error', fail);
  redis.once('ready', () => redis.off('error', fail));
  return redis;
}

export function benchRedis(): Redis {
  return exitUnlessConnects(new Redis(REDIS_URL, { maxRetriesPerRequest: 3 }), REDIS_URL);
}

/** Resolves once a TCP connection to the broker opens; the error's message otherwise. */
function probe(broker: string): Promise<string | null> {
  const [host, port] = [
    broker.slice(0, broker.lastIndexOf(':')),
    broker.slice(broker.lastIndexOf(':') + 1),
  ];
  return new Promise((resolve) => {
    const socket = connect({ host, port: Number(port), timeout: 5_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(null);
    });
    socket.once('timeout', () => {
      socket.destroy();
      resolve('no answer within 5 s');
    });
    socket.once('error', (error) => resolve(error.message));
  });
}

/** Exits with stackMissing unless one of the brokers accepts a connection. */
async function requireKafka(): Promise<void> {
  const brokers = KAFKA_BROKERS.split(',');
  const failures = await Promise.all(brokers.map(probe));
  if (failures.some((f) => f === null)) return;
  stackMissing('Kafka', KAFKA_BROKERS, failures.join('; '));
}

export interface BenchKafka {
  readonly admin: Admin;
  readonly producer: Producer;
  createTopic(topic: string, partitions: number): Promise<void>;
  deleteTopics(topics: readonly string[]): Promise<void>;
  /** Messages produced to the topic (sum of high watermarks). */
  endOffset(topic: string): Promise<number>;
  /** Messages the group has committed on the topic. */
  committed(groupId: string, topic: string): Promise<number>;
  close(): Promise<void>;
}

export async function benchKafka(clientId: string): Promise<BenchKafka> {
  await requireKafka();
  dropNegativeTimeoutWarning();
  const kafka = new Kafka({
    clientId,
    brokers: KAFKA_BROKERS.split(','),
    logLevel: logLevel.ERROR,
  });
  const admin = kafka.admin();
  await admin.connect();
  // Plain producer, acks=1: the bench's own producing should cost as little as possible.
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  // Topics as the service creates them: it waits until the new partitions' leaders serve them,
  // where kafkajs's own wait gives up on a broker that has not heard of the topic yet (a stack
  // started a moment ago).
  const topics = await createKafkajsClient({
    brokers: KAFKA_BROKERS.split(','),
    clientId: `${clientId}-topics`,
    logger: pino({ level: 'error' }),
  }).createAdmin();
  return {
    admin,
    producer,
    createTopic: (topic, partitions) =>
      topics.ensureTopics([{ topic, numPartitions: partitions, cleanupPolicy: 'delete' }]),
    async deleteTopics(topics) {
      const existing = new Set(await admin.listTopics());
      const gone = topics.filter((t) => existing.has(t));
      if (gone.length > 0) await admin.deleteTopics({ topics: gone, timeout: 30_000 });
    },
    async endOffset(topic) {
      const offsets = await admin.fetchTopicOffsets(topic);
      return offsets.reduce((sum, p) => sum + Number(p.high), 0);
    },
    async committed(groupId, topic) {
      const [result] = await admin.fetchOffsets({ groupId, topics: [topic] });
      return (result?.partitions ?? []).reduce((sum, p) => sum + Math.max(0, Number(p.offset)), 0);
    },
    async close() {
      await producer.disconnect();
      await admin.disconnect();
      await topics.disconnect();
    },
  };
}

export interface Message {
  readonly key: string;
  readonly value: string;
}

/** Produces in batches with a few sends in flight; resolves when all are acknowledged. */
export async function produceAll(
  producer: Producer,
  topic: string,
  messages: readonly Message[],
  batchSize = 2_000,
  inFlight = 4,
): Promise<void> {
  const batches: Message[][] = [];
  for (let i = 0; i < messages.length; i += batchSize) {
    batches.push(messages.slice(i, i + batchSize));
  }
  let next = 0;
  const worker = async () => {
    while (next < batches.length) {
      const batch = batches[next++] as Message[];
      await producer.send({ topic, acks: 1, messages: batch });
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

/** Deletes every key under the prefix. */
export async function dropPrefix(redis: RedisClient, prefix: string): Promise<number> {
  let count = 0;
  // One key per command: on a cluster, one page of keys spans slots.
  for await (const keys of scanKeys(redis, `${prefix}*`)) {
    await Promise.all(keys.map((key) => redis.unlink(key)));
    count += keys.length;
  }
  return count;
}

export async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info('memory');
  return Number(/used_memory:(\d+)/.exec(info)?.[1] ?? Number.NaN);
}

export async function redisPid(redis: Redis): Promise<number> {
  const info = await redis.info('server');
  return Number(/process_id:(\d+)/.exec(info)?.[1]);
}

export async function redisVersion(redis: Redis): Promise<string> {
  const info = await redis.info('server');
  return /redis_version:(\S+)/.exec(info)?.[1] ?? '?';
}

/** Waits while Redis rewrites its AOF: a background fork would skew a measurement. */
export async function waitForQuietRedis(redis: Redis): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const info = await redis.info('persistence');
    if (/aof_rewrite_in_progress:0/.test(info) && /rdb_bgsave_in_progress:0/.test(info)) return;
    await new Promise((r) => setTimeout(r, 500));
  }
}

export function kafkaPid(): number | null {
  try {
    return Number(readFileSync(`${ROOT}.local/kafka/kafka.pid`, 'utf8').trim()) || null;
  } catch {
    return null;
  }
}
