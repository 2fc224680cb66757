import { createHash } from 'node:crypto';
import { Kafka, type Producer as KafkajsProducer, logLevel, Partitioners } from 'kafkajs';
import { type ConsumerApp, startConsumers } from '../../../consumers/app.js';
import type { KafkaMessage, Producer } from '../../../consumers/kafka/client.js';
import { type Config, loadConfig } from '../../../src/config.js';
import { createKeys, type ReadModelKeys } from '../../../src/read-model/keys.js';
import type { RedisClient } from '../../../src/read-model/redis-connection.js';
import {
  dropPrefix,
  isolatedEnv,
  kafkaBrokers,
  testKafkaClient,
  testLogger,
  testRedis,
  uniqueId,
  waitFor,
} from '../../support/stack.js';

// One consumer app on its own topics, group and key prefix, plus a producer to feed it.

export interface Harness {
  readonly config: Config;
  readonly keys: ReadModelKeys;
  readonly redis: RedisClient;
  readonly app: ConsumerApp;
  send(topic: string, key: string | null, value: unknown): Promise<void>;
  /** As `send`, with the record's Kafka timestamp (CreateTime) set: it dates a tombstone. */
  sendAt(topic: string, key: string, value: unknown, timestampMs: number): Promise<void>;
  /** Waits until every message sent so far was applied, found stale or dead-lettered. */
  settled(): Promise<void>;
  /** Reads the dead-letter topic from the start. */
  deadLetters(): Promise<KafkaMessage[]>;
  /** A counter's sum over the series whose labels match `labels`. */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  /**
   * Waits until a counter reaches `atLeast` and returns it. Counters move once Redis acknowledged
   * a batch, a moment after its state became visible to readers, so a test that saw the state
   * waits for the count too.
   */
  counted(name: string, atLeast: number, labels?: Record<string, string>): Promise<number>;
  stop(): Promise<void>;
}

export interface HarnessOptions {
  readonly env?: Record<string, string>;
  readonly clock?: () => number;
  readonly redis?: RedisClient;
  readonly redisUrl?: string;
  /** Consume these topics (e.g. another harness's, to replay them) instead of new ones. */
  readonly topics?: Config['topics'];
}

export async function startHarness(label: string, options: HarnessOptions = {}): Promise<Harness> {
  const id = uniqueId(label);
  const config = loadConfig({
    ...isolatedEnv(id),
    ...(options.redisUrl ? { REDIS_URL: options.redisUrl } : {}),
    CONSUMER_MAX_RETRY_DELAY_MS: '500',
    ...(options.topics
      ? {
          TOPIC_INSTALLATIONS: options.topics.installations,
          TOPIC_TELEMETRY: options.topics.telemetry,
          TOPIC_ACCESS: options.topics.access,
          TOPIC_DEADLETTER: options.topics.deadletter,
        }
      : {}),
    ...options.env,
  });
  const keys = createKeys(config.redis.keyPrefix);
  const redis = options.redis ?? testRedis();
  const kafka = testKafkaClient();
  const app = await startConsumers({
    config,
    logger: testLogger,
    kafka,
    redis,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  const producer: Producer = kafka.createProducer();
  await producer.connect();
  const collected: KafkaMessage[] = [];
  const sent = new Map<string, number>();
  const metric = async (name: string, labels: Record<string, string> = {}) => {
    const m = await app.metrics.getSingleMetric(name)?.get();
    return (m?.values ?? [])
      .filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
      .reduce((total, v) => total + v.value, 0);
  };
  const handled = async (topic: string) => {
    let total = 0;
    for (const name of [
      'ingest_events_applied_total',
      'ingest_events_stale_total',
      'ingest_messages_rejected_total',
    ])
      total += await metric(name, { topic });
    return total;
  };
  let dlqStarted = false;
  // The project's producer sets no timestamp; this one, made on first use, does. Same
  // partitioner (the Java client's hash), so one key still lands in one partition, in order.
  let timed: KafkajsProducer | null = null;
  const serialize = (value: unknown) =>
    value === null
      ? null
      : typeof value === 'string' || Buffer.isBuffer(value)
        ? value
        : JSON.stringify(value);
  const dlq = kafka.createConsumer({
    groupId: `${id}-dlq-reader`,
    topics: [config.topics.deadletter],
    fromBeginning: true,
  });

  return {
    config,
    keys,
    redis,
    app,
    async send(topic, key, value) {
      await producer.send(topic, [{ key, value: serialize(value) }]);
      sent.set(topic, (sent.get(topic) ?? 0) + 1);
    },
    async sendAt(topic, key, value, timestampMs) {
      if (timed === null) {
        const kafka = new Kafka({ brokers: kafkaBrokers(), logLevel: logLevel.NOTHING });
        timed = kafka.producer({ createPartitioner: Partitioners.DefaultPartitioner });
        await timed.connect();
      }
      await timed.send({
        topic,
        messages: [{ key, value: serialize(value), timestamp: String(timestampMs) }],
      });
      sent.set(topic, (sent.get(topic) ?? 0) + 1);
    },
    async settled() {
      await waitFor(
        'every sent message handled',
        async () => {
          for (const [topic, count] of sent) if ((await handled(topic)) < count) return undefined;
          return true;
        },
        20_000,
      );
    },
    metric,
    counted: (name, atLeast, labels = {}) =>
      waitFor(`${name} >= ${atLeast}`, async () => {
        const value = await metric(name, labels);
        return value >= atLeast ? value : undefined;
      }),
    async deadLetters() {
      if (!dlqStarted) {
        dlqStarted = true;
        await dlq.start(async (batch) => {
          collected.push(...batch.messages);
        });
      }
      return collected;
    },
    async stop() {
      await app.stop();
      if (dlqStarted) await dlq.stop();
      await producer.disconnect();
      await timed?.disconnect();
      if (!options.redis) {
        await dropPrefix(redis, config.redis.keyPrefix);
        redis.disconnect();
      }
    },
  };
}

export const iso = (ms: number): string => new Date(ms).toISOString();

/** HGETALL as parsed JSON values. */
export async function devicesOf(
  h: Harness,
  installationId: number,
): Promise<Record<string, Record<string, unknown>>> {
  const hash = await h.redis.hgetall(h.keys.devices(installationId));
  return Object.fromEntries(Object.entries(hash).map(([f, v]) => [f, JSON.parse(v)]));
}

export async function flowOf(h: Harness, installationId: number) {
  const hash = await h.redis.hgetall(h.keys.flow(installationId));
  if (!hash.data) return undefined;
  return {
    data: JSON.parse(hash.data) as Record<string, unknown> | null,
    validUntil: Number(hash.validUntil),
  };
}

/** A valid Installation record. */
export const installation = (id: number, name: string) => ({
  id,
  name,
  type: 'private',
  address: 'Main St 1',
  postalCode: '1000',
  city: 'Town',
  country: 'DE',
  timezone: 'Europe/Berlin',
  latitude: 52.5,
  longitude: 13.4,
  altitude: null,
  creationDate: '2024-01-02T03:04:05Z',
});

export const sha = (s: string): string => createHash('sha256').update(s).digest('hex');
