import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deletionMarkerKey,
  deviceIndexKey,
  deviceTimesKey,
  pendingReleaseKey,
} from '../../src/read-model/keys.js';
import { waitFor } from '../support/stack.js';
import {
  devicesOf,
  flowOf,
  type Harness,
  installation,
  iso,
  startHarness,
} from './support/consumer-harness.js';

// A deleted installation stays deleted: telemetry observed before its deletion (by event or by
// tombstone) brings back neither devices nor flow; a newer upsert and newer telemetry do.

let h: Harness;
const now = Date.now();
const until = <T>(what: string, probe: () => Promise<T | undefined>) =>
  waitFor(what, probe, 20_000);

const upsert = (id: number, atMs: number, name = 'home') =>
  h.send(h.config.topics.installations, String(id), {
    type: 'installation.upserted',
    occurredAt: iso(atMs),
    installation: installation(id, name),
    companyId: null,
  });

/** Deletes at `atMs`: an installation.deleted dated so, or a tombstone whose Kafka timestamp it is. */
const deleteAt = (id: number, atMs: number, tombstone: boolean) =>
  tombstone
    ? h.sendAt(h.config.topics.installations, String(id), null, atMs)
    : h.send(h.config.topics.installations, String(id), {
        type: 'installation.deleted',
        occurredAt: iso(atMs),
        installationId: id,
      });

const nameOf = async (id: number) => {
  const json = await h.redis.get(h.keys.installation(id));
  return json ? (JSON.parse(json) as { name: string }).name : null;
};
const stale = (topic: string) => h.metric('ingest_events_stale_total', { topic });

const telemetry = (id: number, deviceId: number, atMs: number, powerDc: number) =>
  h.send(h.config.topics.telemetry, String(id), {
    type: 'device.state',
    installationId: id,
    category: 'battery',
    deviceId,
    observedAt: iso(atMs),
    state: { soe: 50, powerDc },
  });

/** The deletion landed, devices released (two steps: the script, then the index release). */
const deleted = (id: number, deviceIds: readonly number[]) =>
  until('deleted, devices released', async () => {
    // One key per command: on a cluster they live in several slots.
    const keys = [
      h.keys.installation(id),
      ...deviceIds.map((d) => deviceIndexKey(h.keys, `battery:${d}`)),
      pendingReleaseKey(h.keys, id),
    ];
    const left = await Promise.all(keys.map((key) => h.redis.exists(key)));
    return left.every((n) => n === 0) ? true : undefined;
  });

async function populated(id: number): Promise<void> {
  await upsert(id, now - 60_000);
  await telemetry(id, id * 10, now - 50_000, 100);
  await until('device and flow', async () => ((await flowOf(h, id))?.data ? true : undefined));
}

async function expectGone(id: number): Promise<void> {
  expect(await devicesOf(h, id)).toEqual({});
  // The flow inputs go with the devices: a re-created installation must not count old devices.
  // Only the revision stays (bumped: the telemetry owner's copy is refused and reloaded).
  expect(Object.keys(await h.redis.hgetall(deviceTimesKey(h.keys, id)))).toEqual(['#rev']);
  expect(await h.redis.exists(h.keys.flow(id), h.keys.installation(id))).toBe(0);
}

beforeAll(async () => {
  h = await startHarness('deletion');
});
afterAll(async () => {
  await h?.stop();
});

describe('deleted installations stay deleted', () => {
  it.each([
    ['an event', false],
    ['a tombstone', true],
  ])('ignores telemetry older than a deletion by %s', async (_, tombstone) => {
    const id = tombstone ? 7702 : 7701;
    await populated(id);
    await h.send(
      h.config.topics.installations,
      String(id),
      tombstone
        ? null
        : { type: 'installation.deleted', occurredAt: iso(now - 30_000), installationId: id },
    );
    // The deletion lands in two steps (the script, then the device index release): wait for
    // both, since the index release is what must not be lost.
    await until('deleted, devices released', async () => {
      // One key per command: on a cluster they live in three slots.
      const keys = [
        h.keys.installation(id),
        deviceIndexKey(h.keys, `battery:${id * 10}`),
        pendingReleaseKey(h.keys, id),
      ];
      const left = await Promise.all(keys.map((key) => h.redis.exists(key)));
      return left.every((n) => n === 0) ? true : undefined;
    });

    // Observed before the deletion: the device it names and a new one.
    await telemetry(id, id * 10, now - 40_000, 200);
    await telemetry(id, id * 10 + 1, now - 35_000, 300);
    await h.settled();
    await expectGone(id);

    // A newer upsert re-creates it; newer telemetry is applied again, older still is not.
    const later = tombstone ? Date.now() + 1_000 : now - 20_000;
    await upsert(id, later);
    await telemetry(id, id * 10 + 2, now - 45_000, 400);
    await telemetry(id, id * 10, Math.min(later + 1_000, Date.now() + 60_000), 500);
    const flow = await until('the new flow', async () => {
      const f = await flowOf(h, id);
      return f?.data ? f : undefined;
    });
    expect(flow.data).toMatchObject({ batteryPower: 500 });
    expect(Object.keys(await devicesOf(h, id))).toEqual([`battery:${id * 10}`]);
  });
});

describe('a deletion at T ignores what is dated at or before T (docs/events.md)', () => {
  it.each([
    ['an installation.deleted dated T', false],
    ['a tombstone whose Kafka timestamp is T', true],
  ])(
    'after %s: upserts at T - 1 ms and T are stale, at T + 1 ms applied; redelivery too',
    async (_, tombstone) => {
      const id = tombstone ? 7712 : 7711;
      const T = now - 30_000;
      const topic = h.config.topics.installations;
      await populated(id);
      await deleteAt(id, T, tombstone);
      await deleted(id, [id * 10]);

      const staleBefore = await stale(topic);
      await upsert(id, T - 1, 'before');
      await upsert(id, T, 'at');
      // Telemetry at T is as stale as the upsert; a millisecond later it is stored.
      await telemetry(id, id * 10 + 1, T, 300);
      await telemetry(id, id * 10 + 2, T + 1, 400);
      await h.settled();
      expect(await nameOf(id)).toBeNull();
      expect(await stale(topic)).toBe(staleBefore + 2);

      await upsert(id, T + 1, 'after');
      await until('the upsert at T + 1 ms', async () =>
        (await nameOf(id)) === 'after' ? true : undefined,
      );
      expect(await h.redis.hget(h.keys.installationMeta(id), 'occurredAt')).toBe(String(T + 1));
      expect(Object.keys(await devicesOf(h, id))).toEqual([`battery:${id * 10 + 2}`]);

      // Redelivered in log order (a retried batch, a replay): the same end state. A tombstone
      // deletes whatever was applied, so it takes the installation once more, until the upsert
      // at T + 1 ms brings it back; an event at T is older than that upsert and is ignored.
      await deleteAt(id, T, tombstone);
      if (tombstone) await deleted(id, [id * 10 + 2]);
      await upsert(id, T - 1, 'before');
      await upsert(id, T, 'at');
      await upsert(id, T + 1, 'after');
      await h.settled();
      expect(await nameOf(id)).toBe('after');
      expect(await h.redis.hget(h.keys.installationMeta(id), 'occurredAt')).toBe(String(T + 1));
      expect(await h.redis.get(deletionMarkerKey(h.keys, id))).toBe(String(T));
      // What a redelivered tombstone took stays taken: the device observed at T + 1 ms comes back
      // with its next observation (telemetry is another topic, not redelivered with it).
      expect(Object.keys(await devicesOf(h, id))).toEqual(
        tombstone ? [] : [`battery:${id * 10 + 2}`],
      );
    },
  );
});
