import kafkajs from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupIdOf } from '../../src/consumer-groups.js';
import { readEpoch } from '../../src/read-model/epoch.js';
import { recordFigures } from '../support/figures.js';
import { kafkaBrokers, testKafkaClient, waitFor } from '../support/stack.js';
import { type Harness, iso, startHarness } from './support/consumer-harness.js';

// A read model built while producers keep writing (a first deployment, a new group, the
// rebuild) is complete, and the API serves, once the consumers reached the ends the topics had
// when the build began: it never waits for production to pause.

const { Kafka, logLevel } = kafkajs;
const BACKLOG = 3_000;
const battery = (inst: number, atMs: number, soe: number) => ({
  type: 'device.state',
  installationId: inst,
  category: 'battery',
  deviceId: inst * 10,
  observedAt: iso(atMs),
  state: { soe },
});

describe('a build under steady production', () => {
  let feed: Harness;
  let build: Harness | undefined;
  const producer = new Kafka({ brokers: kafkaBrokers(), logLevel: logLevel.NOTHING }).producer();
  let producing = true;
  let produced = 0;
  let production: Promise<void> = Promise.resolve();

  beforeAll(async () => {
    // Its topics, and a backlog on them, before the build starts.
    feed = await startHarness('build-feed');
    await producer.connect();
    const topic = feed.config.topics.telemetry;
    const now = Date.now() - 60_000;
    for (let sent = 0; sent < BACKLOG; sent += 500) {
      await producer.send({
        topic,
        messages: Array.from({ length: 500 }, (_, i) => {
          const inst = ((sent + i) % 100) + 1;
          return { key: String(inst), value: JSON.stringify(battery(inst, now + sent + i, 1)) };
        }),
      });
    }
    // Then 20 events every 50 ms (400/s) for as long as the test runs.
    production = (async () => {
      while (producing) {
        const inst = (produced % 100) + 1;
        const at = Date.now() - 1_000;
        await producer.send({
          topic,
          messages: Array.from({ length: 20 }, (_, i) => ({
            key: String(((inst + i) % 100) + 1),
            value: JSON.stringify(battery(((inst + i) % 100) + 1, at, 50)),
          })),
        });
        produced += 20;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
  });
  afterAll(async () => {
    producing = false;
    await production;
    await producer.disconnect();
    await build?.stop();
    await feed?.stop();
  });

  it('completes once the consumers reach the ends of the build start, while production goes on', async () => {
    const admin = await testKafkaClient().createAdmin();
    try {
      const topic = feed.config.topics.telemetry;
      const since = Date.now();
      const built = await startHarness('build', {
        topics: feed.config.topics,
        env: { CONSUMER_LAG_INTERVAL_MS: '250' },
      });
      build = built;
      const endsAtStart = await admin.endOffsets(topic);
      const producedAtStart = produced;
      const complete = await waitFor(
        'the build marked complete',
        async () => ((await readEpoch(built.redis, built.keys))?.complete ? true : undefined),
        30_000,
      );
      const ms = Date.now() - since;
      expect(complete).toBe(true);
      // Production never paused: events were written during the whole build.
      expect(produced - producedAtStart).toBeGreaterThan(0);
      // Complete means the group passed every end the topic had when the build began.
      const group = groupIdOf(built.config, 'telemetry');
      const committed = await admin.committedOffsets(group, topic);
      for (const end of endsAtStart) {
        const at = committed.find((c) => c.partition === end.partition)?.offset ?? end.start;
        expect(BigInt(at)).toBeGreaterThanOrEqual(BigInt(end.end));
      }
      recordFigures(
        'consumers-build-readiness',
        `backlog ${BACKLOG} + 400 events/s: build marked complete after ${ms} ms (${produced - producedAtStart} produced meanwhile)`,
      );
    } finally {
      await admin.disconnect();
    }
  });
});
