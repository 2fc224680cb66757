import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/stack.js';
import {
  devicesOf,
  flowOf,
  type Harness,
  installation,
  iso,
  startHarness,
} from './support/consumer-harness.js';

// installations.v1 on real Kafka and Redis: last-writer-wins upserts, deletion by event and by
// tombstone, and what a deletion takes with it (devices, flow, access views).

let h: Harness;
let nextId = 5000;
const newId = () => nextId++;
const now = Date.now();
const until = <T>(what: string, probe: () => Promise<T | undefined>) =>
  waitFor(what, probe, 20_000);

const upsert = (id: number, name: string, atMs: number, companyId: number | null = null) =>
  h.send(h.config.topics.installations, String(id), {
    type: 'installation.upserted',
    occurredAt: iso(atMs),
    installation: { ...installation(id, name), vendorExtra: 1 },
    companyId,
  });

const nameOf = async (id: number) => {
  const json = await h.redis.get(h.keys.installation(id));
  return json ? (JSON.parse(json) as { name: string }).name : undefined;
};

const stale = () => h.metric('ingest_events_stale_total', { topic: h.config.topics.installations });
/** Counted exactly once: waits for the count, then checks nothing else was counted. */
const staleCounted = async (before: number) =>
  expect(
    await h.counted('ingest_events_stale_total', before + 1, {
      topic: h.config.topics.installations,
    }),
  ).toBe(before + 1);

beforeAll(async () => {
  h = await startHarness('inst');
});
afterAll(async () => {
  await h?.stop();
});

describe('installation upserts', () => {
  it('stores the record, keeps the newest by occurredAt, and the later of equal ones', async () => {
    const id = newId();
    const staleBefore = await stale();
    await upsert(id, 'first', now - 5_000, 7);
    await upsert(id, 'older', now - 9_000);
    await upsert(id, 'equal', now - 5_000, 8);
    // One key, one partition: once 'equal' shows, 'older' was processed (and ignored).
    await until('the equal upsert', async () =>
      (await nameOf(id)) === 'equal' ? true : undefined,
    );
    await staleCounted(staleBefore);
    const json = JSON.parse((await h.redis.get(h.keys.installation(id))) as string);
    expect(Object.keys(json)).toEqual([
      'id',
      'name',
      'type',
      'address',
      'postalCode',
      'city',
      'country',
      'timezone',
      'latitude',
      'longitude',
      'altitude',
      'creationDate',
    ]);
    expect(json.creationDate).toBe('2024-01-02T03:04:05+00:00');
    expect(await h.redis.hgetall(h.keys.installationMeta(id))).toEqual({
      occurredAt: String(Math.floor(now - 5_000)),
      companyId: '8',
    });
  });

  it('dead-letters a record under the wrong key or with an invalid time zone', async () => {
    const id = newId();
    await h.send(h.config.topics.installations, 'not-the-id', {
      type: 'installation.upserted',
      occurredAt: iso(now),
      installation: installation(id, 'x'),
      companyId: null,
    });
    await h.send(h.config.topics.installations, String(id), {
      type: 'installation.upserted',
      occurredAt: iso(now),
      installation: { ...installation(id, 'x'), timezone: 'Mars/Olympus' },
      companyId: null,
    });
    const dead = await until('two dead letters', async () => {
      const all = (await h.deadLetters()).filter(
        (m) => m.key?.toString() === 'not-the-id' || m.key?.toString() === String(id),
      );
      return all.length >= 2 ? all : undefined;
    });
    expect(dead.map((m) => m.headers['x-reason']?.toString()).sort()).toEqual([
      'invalid_key',
      'schema_violation',
    ]);
    expect(await h.redis.exists(h.keys.installation(id))).toBe(0);
  });
});

describe('installation deletion', () => {
  async function populated(id: number) {
    await upsert(id, 'doomed', now - 5_000);
    await h.send(h.config.topics.telemetry, String(id), {
      type: 'device.state',
      installationId: id,
      category: 'battery',
      deviceId: id * 10,
      observedAt: iso(now - 1_000),
      state: { soe: 50, powerDc: 10 },
    });
    await until('device and flow', async () => ((await flowOf(h, id))?.data ? true : undefined));
    await until('installation', () => nameOf(id));
  }

  it('deletes by event with its devices and flow, and ignores older upserts afterwards', async () => {
    const id = newId();
    await populated(id);
    await h.send(h.config.topics.installations, String(id), {
      type: 'installation.deleted',
      occurredAt: iso(now - 2_000),
      installationId: id,
    });
    await until('deleted', async () =>
      (await h.redis.exists(h.keys.installation(id))) === 0 ? true : undefined,
    );
    expect(await devicesOf(h, id)).toEqual({});
    expect(await h.redis.exists(h.keys.flow(id))).toBe(0);
    const staleBefore = await stale();
    await upsert(id, 'resurrected?', now - 3_000);
    await upsert(id, 'reborn', now - 1_000);
    // Same key, same partition: once 'reborn' shows, the older upsert was processed and ignored.
    await until('newer upsert', async () => ((await nameOf(id)) === 'reborn' ? true : undefined));
    await staleCounted(staleBefore);
  });

  it('deletes on a tombstone', async () => {
    const id = newId();
    await populated(id);
    await h.send(h.config.topics.installations, String(id), null);
    await until('deleted', async () =>
      (await h.redis.exists(h.keys.installation(id))) === 0 ? true : undefined,
    );
    expect(await devicesOf(h, id)).toEqual({});
    expect(await h.redis.exists(h.keys.flow(id), h.keys.installationMeta(id))).toBe(0);
  });
});
