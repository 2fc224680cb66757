import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaMessage } from '../../consumers/kafka/client.js';
import { testKafkaClient, uniqueId, waitFor } from '../support/stack.js';
import { devicesOf, type Harness, iso, startHarness } from './support/consumer-harness.js';

// Messages that fail for what they are, not because Redis or Kafka is down, never stall their
// partition: a message too large to forward, a Redis reply error on one installation's keys,
// and an installation whose stored devices cannot be read back. All on one partition, so a
// stall would hold back every later message.

let h: Harness;
const now = Date.now();
const until = <T>(what: string, probe: () => Promise<T | undefined>) =>
  waitFor(what, probe, 30_000);

const battery = (inst: number, deviceId: number, atMs: number, state: object) => ({
  type: 'device.state',
  installationId: inst,
  category: 'battery',
  deviceId,
  observedAt: iso(atMs),
  state,
});

const send = (event: unknown) => h.send(h.config.topics.telemetry, 'same-partition', event);

async function deadFor(
  what: string,
  match: (m: KafkaMessage) => boolean,
  count = 1,
): Promise<KafkaMessage[]> {
  return until(what, async () => {
    const found = (await h.deadLetters()).filter(match);
    return found.length >= count ? found : undefined;
  });
}

const reason = (m: KafkaMessage) => m.headers['x-reason']?.toString();

beforeAll(async () => {
  const id = uniqueId('poison');
  const topics = {
    installations: `${id}-installations`,
    telemetry: `${id}-telemetry`,
    access: `${id}-access`,
    deadletter: `${id}-deadletter`,
  };
  // A telemetry topic that accepts ~2 MB messages; the dead-letter topic keeps the default 1 MiB.
  const admin = await testKafkaClient().createAdmin();
  try {
    await admin.ensureTopics([
      {
        topic: topics.telemetry,
        numPartitions: 1,
        cleanupPolicy: 'delete',
        config: { 'max.message.bytes': String(2 * 1024 * 1024) },
      },
    ]);
  } finally {
    await admin.disconnect();
  }
  h = await startHarness('poison', { topics });
});
afterAll(async () => {
  await h?.stop();
});

describe('poison messages', () => {
  it('dead-letters a message too large to forward with headers only, and goes on', async () => {
    const inst = 9101;
    const huge = { ...battery(inst, 1, now - 1_000, { soe: 'x'.repeat(990_000) }) };
    await send(huge);
    await send(battery(inst, 2, now - 1_000, { soe: 42 }));
    await until('the event after the huge one', async () =>
      (await devicesOf(h, inst))['battery:2'] ? true : undefined,
    );
    const [dead] = await deadFor('the huge one', (m) => reason(m) === 'too_large');
    expect(dead?.value).toBeNull();
    expect(dead?.headers['x-source-topic']?.toString()).toBe(h.config.topics.telemetry);
    expect(dead?.headers['x-source-offset']?.toString()).toMatch(/^\d+$/);
    // Over the topic's maximum size first (docs/events.md Limits), then too large to forward.
    expect(dead?.headers['x-detail']?.toString()).toContain('was exceeds_limits');
    expect((await devicesOf(h, inst))['battery:1']).toBeUndefined();
  });

  it('isolates a message whose projection fails on a Redis reply error', async () => {
    const broken = 9201;
    const fine = 9202;
    // A devices key of the wrong type: every command on it fails with WRONGTYPE.
    await h.redis.set(h.keys.devices(broken), 'not a hash');
    await send(battery(fine, 1, now - 2_000, { soe: 10 }));
    await send(battery(broken, 1, now - 1_000, { soe: 20 }));
    await send(battery(fine, 2, now - 1_000, { soe: 30 }));
    await until('the events around the broken one', async () => {
      const d = await devicesOf(h, fine);
      return d['battery:1'] && d['battery:2'] ? true : undefined;
    });
    const [dead] = await deadFor(
      'the broken one',
      (m) => reason(m) === 'processing_error' && m.value?.toString().includes(`${broken}`) === true,
    );
    expect(dead?.headers['x-detail']?.toString()).toContain('WRONGTYPE');
    expect(await h.redis.get(h.keys.devices(broken))).toBe('not a hash');
  });

  it('dead-letters the events touching an installation whose stored devices are corrupt', async () => {
    const corrupt = 9301;
    const fine = 9302;
    await h.redis.hset(h.keys.devices(corrupt), 'battery:9', '{not json');
    const before = await h.metric('ingest_corrupt_installations_total');
    await send(battery(corrupt, 1, now - 1_000, { soe: 20 }));
    await send(battery(fine, 1, now - 1_000, { soe: 30 }));
    await until('the other installation', async () =>
      (await devicesOf(h, fine))['battery:1'] ? true : undefined,
    );
    const [dead] = await deadFor(
      'the event on the corrupt installation',
      (m) =>
        reason(m) === 'processing_error' && m.value?.toString().includes(`${corrupt}`) === true,
    );
    expect(dead?.headers['x-detail']?.toString()).toBe(
      `stored devices of installation ${corrupt} are unreadable`,
    );
    expect(await h.redis.hkeys(h.keys.devices(corrupt))).toEqual(['battery:9']);
    await h.counted('ingest_corrupt_installations_total', before + 1);
  });
});
