import { type Consumer, Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin, Producer } from '../../consumers/kafka/client.js';
import { topicSpecs } from '../../consumers/kafka/topics.js';
import { REQUIRED_ON_CREATE } from '../../src/domain/device-fields.js';
import { parseInstallationsMessage, parseTelemetryMessage } from '../../src/domain/event-parse.js';
import { runSimulator, type SimulatorResult } from '../../tools/simulation-runner.js';
import { kafkaBrokers, testKafkaClient, uniqueId, waitFor } from '../support/stack.js';

interface Received {
  readonly topic: string;
  readonly key: string | null;
  readonly value: string;
}

// The simulator's produce loop against real topics: what lands there is what the consumers accept.
describe('simulator -> real Kafka topics', () => {
  const run = uniqueId('sim');
  const topics = {
    installations: `${run}-installations`,
    telemetry: `${run}-telemetry`,
    access: `${run}-access`,
    deadletter: `${run}-deadletter`,
  };
  const client = testKafkaClient();
  const received: Received[] = [];
  let admin: Admin;
  let producer: Producer;
  let consumer: Consumer;
  let result: SimulatorResult;

  beforeAll(async () => {
    admin = await client.createAdmin();
    await admin.ensureTopics(topicSpecs(topics, 3));
    producer = client.createProducer();
    await producer.connect();
    const kafka = new Kafka({ brokers: kafkaBrokers(), logLevel: logLevel.NOTHING });
    consumer = kafka.consumer({ groupId: uniqueId('sim-reader') });
    await consumer.connect();
    await consumer.subscribe({
      topics: [topics.installations, topics.telemetry],
      fromBeginning: true,
    });
    await consumer.run({
      eachMessage: async ({ topic, message }) => {
        received.push({
          topic,
          key: message.key?.toString() ?? null,
          value: message.value?.toString() ?? '',
        });
      },
    });
    result = await runSimulator(
      { producer, topics },
      { installations: 4, eventsPerSecond: 150, durationSeconds: 2, seed: 11, offlineFraction: 0 },
    );
  });

  afterAll(async () => {
    await consumer?.disconnect();
    await producer?.disconnect();
    await admin?.disconnect();
  });

  it('produces installations first, then telemetry near the requested rate', () => {
    expect(result.installationsSent).toBe(4);
    // 2 s at 150 events/s; a round of one installation may overshoot by a few events.
    expect(result.events).toBeGreaterThan(200);
    expect(result.events).toBeLessThan(330);
  });

  it('lands events the domain parsers accept, keyed by installation id', async () => {
    await waitFor('every produced message', async () =>
      received.length >= result.installationsSent + result.events ? true : undefined,
    );
    const installations = received.filter((m) => m.topic === topics.installations);
    const telemetry = received.filter((m) => m.topic === topics.telemetry);
    expect(installations).toHaveLength(4);
    expect(telemetry).toHaveLength(result.events);

    for (const m of installations) {
      const parsed = parseInstallationsMessage(m.value, m.key);
      if (!parsed.ok) throw new Error(`${parsed.reason}: ${parsed.detail}`);
      expect(parsed.event.type).toBe('installation.upserted');
      if (parsed.event.type === 'installation.upserted') {
        expect(m.key).toBe(String(parsed.event.installation.id));
      }
    }
    expect(installations.map((m) => m.key).sort()).toEqual(['1', '2', '3', '4']);

    const created = new Set<string>();
    for (const m of telemetry) {
      const parsed = parseTelemetryMessage(m.value);
      if (!parsed.ok) throw new Error(`${parsed.reason}: ${parsed.detail}`);
      const event = parsed.event;
      expect(parsed.droppedKeys).toEqual([]);
      expect(m.key).toBe(String(event.installationId));
      if (event.type !== 'device.state') throw new Error('the simulator only reports state');
      const id = `${event.category}:${event.deviceId}`;
      if (!created.has(id)) {
        for (const field of REQUIRED_ON_CREATE[event.category])
          expect(event.state).toHaveProperty(field);
        created.add(id);
      }
    }
    expect(created.size).toBeGreaterThanOrEqual(8);
  });
});
