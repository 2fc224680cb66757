import { Kafka, logLevel } from 'kafkajs';
import { deviceMovesTopic } from '../../consumers/kafka/topics.js';
import { groupIdOf } from '../../src/consumer-groups.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import { waitUntil } from './processes.js';
import {
  type BenchKafka,
  benchKafka,
  dropPrefix,
  KAFKA_BROKERS,
  type Message,
  produceAll,
  REDIS_URL,
} from './stack.js';

// A consumer process's own telemetry topic, group and Redis prefix, for a case that measures
// the process draining it (bench/cases/tracing-cost.ts): the topic, the environment that points
// the process at it (its other input topics quiet), how far the process has committed, and the
// clean-up.

/** Gateway-like telemetry: installation `9000 + i % installations` reports a battery and a meter. */
export function telemetry(count: number, installations: number): Message[] {
  const now = Date.now();
  return Array.from({ length: count }, (_, i) => {
    const id = 9000 + (i % installations);
    const battery = i % 2 === 0;
    return {
      key: String(id),
      value: JSON.stringify({
        type: 'device.state',
        installationId: id,
        category: battery ? 'battery' : 'energyMeter',
        deviceId: id * 10 + (battery ? 1 : 2),
        observedAt: new Date(now - 60_000 + Math.floor(i / installations)).toISOString(),
        state: battery
          ? { soe: i % 100, powerDc: 300, ratedEnergy: 5000 }
          : { powerAc: i % 500, options: '' },
      }),
    };
  });
}

/** Messages a request of the transactional producer: well under the broker's 1 MiB. */
const CHUNK = 2_000;

export interface TelemetryTopic {
  readonly topic: string;
  /** The consumer process's environment: this topic, its group and prefix, the others quiet. */
  readonly env: Readonly<Record<string, string>>;
  /** Produces `messages`; resolves once the topic's end offsets count `total` messages. */
  produce(messages: readonly Message[], total: number): Promise<void>;
  /**
   * Produces `messages` in one transaction: the process (read_committed) sees them all at once,
   * so it fetches them in full batches whatever its speed, as it does messages produced before
   * it started. Produced as they come, a slow process fetches many small batches instead.
   */
  produceAtOnce(messages: readonly Message[]): Promise<void>;
  /** Messages the process's telemetry group has committed. */
  committed(): Promise<number>;
  /** Deletes the topics (the process's own too) and the prefix; call once the process stopped. */
  close(redis: RedisClient): Promise<void>;
}

export async function telemetryTopic(id: string): Promise<TelemetryTopic> {
  // A client per topic: kafkajs' admin keeps asking for the metadata of topics deleted since.
  const kafka: BenchKafka = await benchKafka(id);
  const topic = `bench-${id}-telemetry`;
  const prefix = `bench:${id}:`;
  const group = `bench-${id}`;
  // The process creates the others itself (quiet: nothing is produced to them).
  const quiet = ['installations', 'access', 'deadletter'].map((t) => `bench-${id}-${t}`);
  await kafka.createTopic(topic, 6);
  return {
    topic,
    env: {
      REDIS_URL,
      KAFKA_BROKERS,
      REDIS_KEY_PREFIX: prefix,
      TOPIC_TELEMETRY: topic,
      TOPIC_INSTALLATIONS: quiet[0] as string,
      TOPIC_ACCESS: quiet[1] as string,
      TOPIC_DEADLETTER: quiet[2] as string,
      CONSUMER_GROUP: group,
      CONSUMER_HEALTH_PORT: '0',
      ONLINE_WINDOW_SECONDS: '3600',
      LOG_LEVEL: 'warn',
    },
    async produce(messages, total) {
      await produceAll(kafka.producer, topic, messages);
      // A new topic's metadata may lag on the admin's connection: ask until it answers.
      await waitUntil(
        `${topic} offsets`,
        async () => (await kafka.endOffset(topic)) >= total,
        30_000,
      );
    },
    async produceAtOnce(messages) {
      const producer = new Kafka({
        clientId: `${id}-tx`,
        brokers: KAFKA_BROKERS.split(','),
        logLevel: logLevel.ERROR,
      }).producer({ transactionalId: `${id}-tx`, idempotent: true, maxInFlightRequests: 1 });
      await producer.connect();
      try {
        const tx = await producer.transaction();
        for (let i = 0; i < messages.length; i += CHUNK) {
          await tx.send({ topic, messages: messages.slice(i, i + CHUNK) });
        }
        await tx.commit();
      } finally {
        await producer.disconnect();
      }
    },
    committed: () =>
      kafka.committed(groupIdOf({ consumer: { groupId: group } }, 'telemetry'), topic),
    async close(redis) {
      await kafka.deleteTopics([topic, ...quiet, deviceMovesTopic(group)]);
      await kafka.close();
      await dropPrefix(redis, prefix);
    },
  };
}
