import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaMessage } from '../../consumers/kafka/client.js';
import { MAX_MESSAGE_BYTES } from '../../src/domain/limits.js';
import { waitFor } from '../support/stack.js';
import {
  devicesOf,
  type Harness,
  installation,
  iso,
  startHarness,
} from './support/consumer-harness.js';

// issue 54 item 6, through real Kafka and Redis: an event over the contract's bounds (a value
// over its topic's maximum size, a string over its field's maximum length) is dead-lettered as
// `exceeds_limits` with its bytes, and nothing of it is stored; the events after it go on.

let h: Harness;
const now = Date.now();
const until = <T>(what: string, probe: () => Promise<T | undefined>) =>
  waitFor(what, probe, 30_000);
const reason = (m: KafkaMessage) => m.headers['x-reason']?.toString();

const inverter = (inst: number, deviceId: number, state: object) => ({
  type: 'device.state',
  installationId: inst,
  category: 'inverter',
  deviceId,
  observedAt: iso(now - 1_000),
  state,
});

beforeAll(async () => {
  h = await startHarness('bounds');
});
afterAll(async () => {
  await h?.stop();
});

async function deadLetterOf(marker: string): Promise<KafkaMessage> {
  return until(`the dead letter of ${marker}`, async () =>
    (await h.deadLetters()).find((m) => m.value?.toString().includes(marker)),
  );
}

describe('bounds on valid input', () => {
  it('dead-letters an 800 KiB vendorStatusString and a 1,025-character one, stores neither', async () => {
    const inst = 5401;
    const huge = inverter(inst, 1, { vendorStatusString: `huge-${'v'.repeat(800 * 1024)}` });
    const long = inverter(inst, 2, { vendorStatusString: `long-${'v'.repeat(1020)}` });
    await h.send(h.config.topics.telemetry, String(inst), huge);
    await h.send(h.config.topics.telemetry, String(inst), long);
    await h.send(h.config.topics.telemetry, String(inst), inverter(inst, 3, { powerAc: 1200 }));
    await until('the event after them', async () =>
      (await devicesOf(h, inst))['inverter:3'] ? true : undefined,
    );
    const hugeDead = await deadLetterOf('huge-');
    expect(reason(hugeDead)).toBe('exceeds_limits');
    expect(hugeDead.headers['x-detail']?.toString()).toMatch(
      new RegExp(`over this topic's maximum of ${MAX_MESSAGE_BYTES.telemetry}$`),
    );
    // Kept as it came, for a replay once the producer is fixed.
    expect(hugeDead.value?.length).toBeGreaterThan(800 * 1024);
    const longDead = await deadLetterOf('long-');
    expect(reason(longDead)).toBe('exceeds_limits');
    expect(longDead.headers['x-detail']?.toString()).toContain('state.vendorStatusString');
    const devices = await devicesOf(h, inst);
    expect(Object.keys(devices).sort()).toEqual(['inverter:3']);
  });

  it('dead-letters an installation whose name is over its maximum length, and stores none', async () => {
    const id = 5402;
    const upsert = (name: string) => ({
      type: 'installation.upserted',
      occurredAt: iso(now - 1_000),
      installation: { ...installation(id, name) },
      companyId: null,
    });
    await h.send(h.config.topics.installations, String(id), upsert(`named-${'n'.repeat(300)}`));
    const dead = await deadLetterOf('named-');
    expect(reason(dead)).toBe('exceeds_limits');
    expect(dead.headers['x-detail']?.toString()).toContain('installation.name');
    expect(await h.redis.exists(h.keys.installation(id))).toBe(0);
  });
});
