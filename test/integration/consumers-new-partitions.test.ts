import kafkajs from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  PartitionNotSentError,
  PRODUCER_METADATA_MAX_AGE_MS,
  partitionedSend,
} from '../../consumers/kafka/partitioned-send.js';
import { startLagMonitor } from '../../consumers/lag-monitor.js';
import { createConsumerMetrics } from '../../consumers/metrics.js';
import { recordFigures } from '../support/figures.js';
import { kafkaBrokers, testKafkaClient, testLogger, uniqueId, waitFor } from '../support/stack.js';
import { devicesOf, type Harness, iso, startHarness } from './support/consumer-harness.js';

// Platform teams add partitions when traffic grows: the consumers take them up within 10 s
// (kafkajs refreshes metadata every 3 s instead of every 5 minutes), and until then lag shows
// them: ingest_topic_lag covers every partition of a topic, whichever process holds it, if any.

const { Kafka, logLevel } = kafkajs;
const battery = (inst: number, atMs: number, powerDc: number) => ({
  type: 'device.state',
  installationId: inst,
  category: 'battery',
  deviceId: inst * 10,
  observedAt: iso(atMs),
  state: { powerDc },
});

describe('partitions added to a topic', () => {
  let h: Harness;
  const kafka = new Kafka({ brokers: kafkaBrokers(), logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  // As platform teams' producers should be: metadata kept young, so a partition added is soon
  // writable (a plain kafkajs producer resolves a send to it without sending: the second test).
  const producer = kafka.producer({ metadataMaxAge: PRODUCER_METADATA_MAX_AGE_MS });
  const partitionsOf = async (topic: string) =>
    (await admin.fetchTopicMetadata({ topics: [topic] })).topics[0]?.partitions.length ?? 0;

  beforeAll(async () => {
    h = await startHarness('partitions', { env: { CONSUMER_LAG_INTERVAL_MS: '500' } });
    await Promise.all([admin.connect(), producer.connect()]);
  });
  afterAll(async () => {
    await Promise.all([admin.disconnect(), producer.disconnect()]);
    await h?.stop();
  });

  it('are consumed within 10 s, with ordering and lag as on the others', async () => {
    const topic = h.config.topics.telemetry;
    const now = Date.now();
    await h.send(topic, '1', battery(1, now - 5_000, 1));
    await h.settled();
    const before = await partitionsOf(topic);
    await admin.createPartitions({ topicPartitions: [{ topic, count: before + 2 }] });
    const since = Date.now();
    const added = before + 1;

    // Two events of one installation on a new partition, in order: the later one stands. Sent
    // once the producer knows the partition (refused, nothing sent, until then).
    const send = partitionedSend(kafka, producer);
    try {
      await waitFor('the new partition writable', () =>
        send
          .send({
            topic,
            messages: [
              { partition: added, key: '2', value: JSON.stringify(battery(2, now - 2_000, 7)) },
              { partition: added, key: '2', value: JSON.stringify(battery(2, now - 1_000, 8)) },
            ],
          })
          .then(
            () => true,
            () => undefined,
          ),
      );
    } finally {
      await send.close();
    }
    // Consumed within 10 s of the partitions being added, however long the producer took.
    await waitFor(
      'the new partition projected',
      async () => ((await devicesOf(h, 2))['battery:20']?.powerDc === 8 ? true : undefined),
      Math.max(0, 10_000 - (Date.now() - since)),
    );
    const ms = Date.now() - since;
    recordFigures('consumers-new-partitions', `partition added -> projected ${ms} ms`);

    // Its lag is reported, and falls to 0 once the offsets are committed.
    await waitFor('lag of the new partition at 0', async () => {
      const values = (await h.app.metrics.getSingleMetric('ingest_topic_lag')?.get())?.values;
      const series = values?.filter((v) => v.labels.topic === topic) ?? [];
      const mine = series.find((v) => v.labels.partition === String(added));
      return series.length === before + 2 && mine?.value === 0 ? true : undefined;
    });
  });

  it('are never acknowledged by the producer before it can send to them', async () => {
    // kafkajs resolves a send to a partition missing from its metadata without sending it: the
    // fault suite counted 647 events acknowledged and absent after partitions were added.
    const topic = uniqueId('partitions-send');
    await admin.createTopics({ topics: [{ topic, numPartitions: 2 }] });
    const stale = kafka.producer({ metadataMaxAge: 600_000 });
    await stale.connect();
    const send = partitionedSend(kafka, stale);
    try {
      // A new topic's leaders take a moment: the first send is the setup, retried until sent.
      await waitFor(
        'the new topic writable',
        async () =>
          await send.send({ topic, messages: [{ key: 'a', value: '1' }] }).then(
            () => true,
            () => undefined,
          ),
      );
      await admin.createPartitions({ topicPartitions: [{ topic, count: 4 }] });
      // Refused while the producer does not know the partition (or its leader is not ready);
      // resolved only if the message is really there.
      const outcome = await send
        .send({ topic, messages: [{ key: 'b', value: '2', partition: 3 }] })
        .then(
          () => 'sent' as const,
          (error: unknown) => error,
        );
      // The new partitions' leaders take a moment too: read their offsets once they answer.
      const offsets = await waitFor('the new partitions led', () =>
        admin.fetchTopicOffsets(topic).catch(() => undefined),
      );
      const written = offsets.find((o) => o.partition === 3)?.high;
      if (outcome === 'sent') expect(written).toBe('1');
      else {
        expect(written).toBe('0');
        if (!(outcome instanceof PartitionNotSentError))
          expect((outcome as { retriable?: unknown }).retriable).toBe(true);
      }
    } finally {
      await send.close();
      await stale.disconnect();
    }
  });

  it('counts a partition no member consumes as lag', async () => {
    const topic = h.config.topics.telemetry;
    const metrics = createConsumerMetrics();
    const kafkaAdmin = await testKafkaClient().createAdmin();
    // A group with no member and nothing committed: all that was produced waits.
    const monitor = startLagMonitor({
      admin: kafkaAdmin,
      groups: [{ topic, groupId: `${h.config.consumer.groupId}-nobody`, assignment: () => [] }],
      metrics,
      intervalMs: 60_000,
      logger: testLogger,
    });
    try {
      await monitor.refresh();
      const ends = await kafkaAdmin.endOffsets(topic);
      const values = (await metrics.topicLag.get()).values;
      for (const end of ends) {
        const lag = values.find((v) => v.labels.partition === String(end.partition))?.value;
        expect(lag, `partition ${end.partition}`).toBe(Number(BigInt(end.end) - BigInt(end.start)));
      }
      expect(values.reduce((total, v) => total + v.value, 0)).toBeGreaterThan(0);
      // Nothing is assigned to this process: its per-assignment gauge stays empty.
      expect((await metrics.lag.get()).values).toEqual([]);
    } finally {
      monitor.stop();
      await kafkaAdmin.disconnect();
    }
  });
});
