import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deviceIndexKey, deviceTimesKey, pendingReleaseKey } from '../../src/read-model/keys.js';
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

const upsert = (id: number, atMs: number) =>
  h.send(h.config.topics.installations, String(id), {
    type: 'installation.upserted',
    occurredAt: iso(atMs),
    installation: installation(id, 'home'),
    companyId: null,
  });

const telemetry = (id: number, deviceId: number, atMs: number, powerDc: number) =>
  h.send(h.config.topics.telemetry, String(id), {
    type: 'device.state',
    installationId: id,
    category: 'battery',
    deviceId,
    observedAt: iso(atMs),
    state: { soe: 50, powerDc },
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
