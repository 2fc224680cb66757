import { Kafka, logLevel, Partitioners } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Producer } from '../../consumers/kafka/client.js';
import { registerCodecs } from '../../consumers/kafka/codecs.js';
import {
  type ReplayRecord,
  replayLogTopic,
  replayTransactionalId,
} from '../../src/domain/dead-letter.js';
import { type DeadLetter, sourceId } from '../../tools/dead-letters/dead-letter-view.js';
import {
  type ReplayOptions,
  readDeadLetters,
  readReplayLog,
  replayDeadLetters,
} from '../../tools/dead-letters/replay.js';
import { kafkaBrokers, testKafkaClient, uniqueId, waitFor } from '../support/stack.js';
import { devicesOf, type Harness, iso, startHarness } from './support/consumer-harness.js';

// The dead-letter tool against real consumers, Kafka and Redis: a refused event replayed after
// the fix is projected, once however often the replay runs; a poison event goes back to the
// dead-letter topic with its count and is not replayed past the limit; a replay never moves
// state backwards; one message dead-lettered twice is replayed once, to its key's partition.

let h: Harness;
let kafka: Kafka;
let producer: Producer;
let skewMs = -3_600_000; // the consumers' clock starts an hour behind: a fault to fix
const until = <T>(what: string, probe: () => Promise<T | undefined>) =>
  waitFor(what, probe, 30_000);

const battery = (inst: number, atMs: number, state: object) => ({
  type: 'device.state',
  installationId: inst,
  category: 'battery',
  deviceId: 1,
  observedAt: iso(atMs),
  state,
});

async function deadLetter(match: (d: DeadLetter) => boolean): Promise<DeadLetter> {
  return until('the dead letter', async () =>
    (await readDeadLetters(kafka, h.config.topics.deadletter)).find(match),
  );
}

const options = (o: Partial<ReplayOptions> = {}): ReplayOptions => ({
  dryRun: false,
  ratePerSecond: 100,
  maxReplays: 3,
  by: 'test-operator',
  ...o,
});

function replay(letters: readonly DeadLetter[], o: Partial<ReplayOptions> = {}) {
  return replayDeadLetters({
    kafka,
    topics: h.config.topics,
    transactionalId: replayTransactionalId(h.config.topics.deadletter),
    letters,
    options: options(o),
    ensureLogTopic: async () => {
      const admin = await testKafkaClient().createAdmin();
      try {
        await admin.ensureTopics([
          {
            topic: replayLogTopic(h.config.topics.deadletter),
            numPartitions: 1,
            cleanupPolicy: 'compact',
          },
        ]);
      } finally {
        await admin.disconnect();
      }
    },
  });
}

const applied = () => h.metric('ingest_events_applied_total', { topic: h.config.topics.telemetry });

beforeAll(async () => {
  registerCodecs();
  kafka = new Kafka({ brokers: kafkaBrokers(), logLevel: logLevel.NOTHING });
  h = await startHarness('dlq-replay', { clock: () => Date.now() + skewMs });
  producer = testKafkaClient().createProducer();
  await producer.connect();
});
afterAll(async () => {
  await producer?.disconnect();
  await h?.stop();
});

/** The partition the producers' partitioner (murmur2 of the key) gives `key` on `topic`. */
async function partitionOfKey(topic: string, key: string): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    const partitionMetadata = topics[0]?.partitions ?? [];
    return Partitioners.DefaultPartitioner()({
      topic,
      partitionMetadata,
      message: { key, value: null },
    });
  } finally {
    await admin.disconnect();
  }
}

describe('replaying dead letters', () => {
  it('projects a refused event once the consumer is fixed, once however often it runs', async () => {
    const inst = 7101;
    await h.send(
      h.config.topics.telemetry,
      String(inst),
      battery(inst, Date.now() - 60_000, { soe: 40 }),
    );
    const refused = await deadLetter(
      (d) => d.reason === 'future_observed_at' && d.key === String(inst),
    );
    skewMs = 0; // the fix: the consumers' clock is right again

    const dry = await replay([refused], { dryRun: true });
    expect(dry.sent.map((s) => s.id)).toEqual([refused.id]);
    expect((await readReplayLog(kafka, h.config.topics.deadletter)).size).toBe(0);

    const first = await replay([refused]);
    expect(first.sent).toEqual([
      {
        id: refused.id,
        to: `${h.config.topics.telemetry}:${refused.source.partition}`,
        replayCount: 1,
      },
    ]);
    await until('the replayed event projected', async () =>
      (await devicesOf(h, inst))['battery:1']?.soe === 40 ? true : undefined,
    );
    const appliedAfterFirst = await h.counted('ingest_events_applied_total', 1, {
      topic: h.config.topics.telemetry,
    });

    const second = await replay([refused]);
    expect(second.sent).toEqual([]);
    expect(second.skipped[0]?.why).toMatch(/^already replayed at .* by test-operator/);
    // A later event on the same partition: once it is applied, a second replay would have been too.
    await h.send(h.config.topics.telemetry, String(inst), battery(inst, Date.now(), { soe: 41 }));
    await until('the later event', async () =>
      (await devicesOf(h, inst))['battery:1']?.soe === 41 ? true : undefined,
    );
    await h.counted('ingest_events_applied_total', appliedAfterFirst + 1, {
      topic: h.config.topics.telemetry,
    });
    expect(await applied()).toBe(appliedAfterFirst + 1);

    const audit = (await readReplayLog(kafka, h.config.topics.deadletter)).get(sourceId(refused));
    expect(audit).toMatchObject({
      by: 'test-operator',
      run: first.run,
      reason: 'future_observed_at',
      replayCount: 1,
      source: refused.source,
      deadLetter: {
        topic: h.config.topics.deadletter,
        partition: refused.partition,
        offset: refused.offset,
      },
    });
  });

  it('sends a poison event back to the dead-letter topic with its count, never past the limit', async () => {
    const inst = 7201;
    await h.send(
      h.config.topics.telemetry,
      String(inst),
      battery(inst, Date.now(), { soe: 'full' }),
    );
    const poison = await deadLetter(
      (d) => d.reason === 'schema_violation' && d.key === String(inst),
    );
    await replay([poison]);
    const again = await deadLetter((d) => d.headers['x-replay-of'] === poison.id);
    expect(again.reason).toBe('schema_violation');
    expect(again.replayCount).toBe(1);
    expect(again.headers['x-replay-count']).toBe('1');
    expect(again.value?.toString()).toBe(poison.value?.toString());

    const limited = await replay([poison, again], { maxReplays: 1 });
    expect(limited.sent).toEqual([]);
    expect(limited.skipped.map((s) => s.why)).toEqual([
      expect.stringMatching(/^already replayed/),
      expect.stringMatching(/^replayed 1 times already/),
    ]);
  });

  it('never moves state backwards: a replayed older event is stale', async () => {
    const inst = 7301;
    const t1 = Date.now() - 120_000;
    const t2 = Date.now() - 60_000;
    const charger = (atMs: number, state: object) => ({
      ...battery(inst, atMs, state),
      category: 'evCharger',
    });
    // Refused: a first event without the category's required fields.
    await h.send(h.config.topics.telemetry, String(inst), charger(t1, { powerAc: 1 }));
    const partial = await deadLetter(
      (d) => d.reason === 'missing_required_fields' && d.key === String(inst),
    );
    await h.send(
      h.config.topics.telemetry,
      String(inst),
      charger(t2, { powerAc: 2, mode: 'auto', supportsBiDirectionalCharging: false }),
    );
    await until('the complete event', async () =>
      (await devicesOf(h, inst))['evCharger:1']?.powerAc === 2 ? true : undefined,
    );
    const stale = await h.metric('ingest_events_stale_total', { topic: h.config.topics.telemetry });
    await replay([partial]);
    await h.counted('ingest_events_stale_total', stale + 1, { topic: h.config.topics.telemetry });
    const device = (await devicesOf(h, inst))['evCharger:1'];
    expect(device?.powerAc).toBe(2);
    expect(device?.lastSeenDate).toBe(iso(t2).replace(/\.\d+Z$/, '+00:00'));
  });
});

describe('a message dead-lettered twice (a consumer redelivery)', () => {
  it('is replayed once, to the partition its key has now', async () => {
    const inst = 7401;
    const telemetry = h.config.topics.telemetry;
    const keyPartition = await partitionOfKey(telemetry, String(inst));
    // Refused on another partition than its key's now: the topic had fewer partitions then.
    const sourcePartition = keyPartition === 0 ? 1 : 0;
    const marker = uniqueId('redelivered');
    // A device of its own: devices are unique across installations, and one seen later elsewhere
    // would make these events stale.
    const event = (atMs: number, state: object) => ({
      ...battery(inst, atMs, state),
      deviceId: 74,
    });
    const copy = {
      key: String(inst),
      // Two hours old: accepted whatever the consumers' clock skew is now.
      value: JSON.stringify(event(Date.now() - 7_200_000, { soe: 55 })),
      headers: {
        'x-source-topic': telemetry,
        'x-source-partition': String(sourcePartition),
        'x-source-offset': '424242',
        'x-reason': 'processing_error',
        'x-detail': marker,
      },
    };
    await producer.send(h.config.topics.deadletter, [copy, copy]);
    const twins = await until('both dead letters', async () => {
      const found = await readDeadLetters(
        kafka,
        h.config.topics.deadletter,
        (d) => d.detail === marker,
      );
      return found.length === 2 ? found : undefined;
    });
    const [first, second] = twins as [DeadLetter, DeadLetter];
    expect(sourceId(first)).toBe(sourceId(second));
    const applied0 = await applied();

    const dry = await replay(twins, { dryRun: true });
    expect(dry.sent).toEqual([
      { id: first.id, to: `${telemetry} (partition by key)`, replayCount: 1 },
    ]);
    const report = await replay(twins);
    expect(report.sent).toEqual([
      { id: first.id, to: `${telemetry}:${keyPartition}`, replayCount: 1 },
    ]);
    expect(report.skipped).toEqual([
      { id: second.id, why: `the same message as ${first.id} (${sourceId(first)})` },
    ]);
    const again = await replay([second]);
    expect(again.sent).toEqual([]);
    expect(again.skipped[0]?.why).toMatch(new RegExp(`^already replayed .*${first.id}\\)$`));

    await until('the replayed event projected', async () =>
      (await devicesOf(h, inst))['battery:74']?.soe === 55 ? true : undefined,
    );
    // A later event with the same key, on the same partition: once it is applied, a second
    // replay would have been too.
    await h.send(telemetry, String(inst), event(Date.now() - 7_140_000, { soe: 56 }));
    await until('the later event', async () =>
      (await devicesOf(h, inst))['battery:74']?.soe === 56 ? true : undefined,
    );
    await h.counted('ingest_events_applied_total', applied0 + 2, { topic: telemetry });
    expect(await applied()).toBe(applied0 + 2);
  });

  it('keeps a message without a key on its original partition', async () => {
    const marker = uniqueId('keyless');
    await producer.send(h.config.topics.deadletter, [
      {
        key: null,
        value: null,
        headers: {
          'x-source-topic': h.config.topics.access,
          'x-source-partition': '2',
          'x-source-offset': '17',
          'x-reason': 'invalid_key',
          'x-detail': marker,
        },
      },
    ]);
    const keyless = await deadLetter((d) => d.detail === marker);
    const dry = await replay([keyless], { dryRun: true });
    expect(dry.sent.map((s) => s.to)).toEqual([`${h.config.topics.access}:2`]);
  });
});

describe('the replay log', () => {
  it('skips a record that is not a replay record, with a warning', async () => {
    const dlq = `${uniqueId('dlq-log')}-deadletter`;
    const admin = await testKafkaClient().createAdmin();
    try {
      await admin.ensureTopics([
        { topic: replayLogTopic(dlq), numPartitions: 1, cleanupPolicy: 'compact' },
      ]);
    } finally {
      await admin.disconnect();
    }
    const record: ReplayRecord = {
      type: 'deadLetter.replayed',
      deadLetter: { topic: dlq, partition: 0, offset: '3' },
      source: { topic: 'device-telemetry.v1', partition: 1, offset: '9' },
      reason: 'schema_violation',
      replayCount: 1,
      by: 'test-operator',
      at: new Date().toISOString(),
      run: 'r1',
    };
    await producer.send(replayLogTopic(dlq), [
      { key: 'stray', value: 'not json {' },
      { key: 'device-telemetry.v1:1:9', value: JSON.stringify(record) },
    ]);
    const warnings: string[] = [];
    const log = await readReplayLog(kafka, dlq, (line) => warnings.push(line));
    expect([...log.keys()]).toEqual(['device-telemetry.v1:1:9']);
    expect(warnings).toEqual([`skipped ${replayLogTopic(dlq)}:0:0: not a replay record`]);
  });
});
