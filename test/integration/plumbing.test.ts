import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin, BatchConsumer, Producer } from '../../consumers/kafka/client.js';
import { createKeys } from '../../src/read-model/keys.js';
import {
  dropPrefix,
  kafkaBrokers,
  testKafkaClient,
  testRedis,
  uniqueId,
  waitFor,
} from '../support/stack.js';

// Proves the plumbing end to end: a message produced to a real topic is consumed through the
// project's Kafka interface, written to real Redis, and only then committed.
describe('plumbing: Kafka -> consumer runner -> Redis', () => {
  const topic = uniqueId('plumbing');
  const groupId = uniqueId('plumbing-group');
  const prefix = `${uniqueId('t')}:`;
  const keys = createKeys(prefix);
  const redis = testRedis();
  const client = testKafkaClient();
  let admin: Admin;
  let producer: Producer;
  let consumer: BatchConsumer;

  beforeAll(async () => {
    admin = await client.createAdmin();
    await admin.ensureTopics([{ topic, numPartitions: 2, cleanupPolicy: 'delete' }]);
    producer = client.createProducer();
    await producer.connect();
    consumer = client.createConsumer({ groupId, topics: [topic], fromBeginning: true });
    await consumer.start(async (batch) => {
      const pipeline = redis.pipeline();
      for (const m of batch.messages) {
        pipeline.set(keys.internal('plumbing', String(m.key)), m.value ?? '');
      }
      await pipeline.exec();
    });
  });

  afterAll(async () => {
    await consumer?.stop();
    await producer?.disconnect();
    await admin?.disconnect();
    await dropPrefix(redis, prefix);
    redis.disconnect();
  });

  it('lands a produced message in Redis and commits its offset afterwards', async () => {
    await producer.send(topic, [{ key: 'device-1', value: '{"hello":"redis"}' }]);

    const stored = await waitFor('the message in Redis', async () => {
      const value = await redis.get(keys.internal('plumbing', 'device-1'));
      return value ?? undefined;
    });
    expect(stored).toBe('{"hello":"redis"}');

    const kafka = new Kafka({ brokers: kafkaBrokers(), logLevel: logLevel.NOTHING });
    const offsets = kafka.admin();
    await offsets.connect();
    try {
      const committed = await waitFor('the committed offset', async () => {
        const [entry] = await offsets.fetchOffsets({ groupId, topics: [topic] });
        const total = (entry?.partitions ?? [])
          .map((p) => Number(p.offset))
          .filter((o) => o > 0)
          .reduce((a, b) => a + b, 0);
        return total === 1 ? total : undefined;
      });
      expect(committed).toBe(1);
    } finally {
      await offsets.disconnect();
    }
  });
});
