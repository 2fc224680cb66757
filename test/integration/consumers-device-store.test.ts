import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatDateTime } from '../../src/domain/date-time.js';
import type { DeviceCategory } from '../../src/domain/device-fields.js';
import {
  applyDeviceState,
  type DeviceRecord,
  serializeDevice,
} from '../../src/domain/device-record.js';
import { computeEnergyFlow, serializeEnergyFlow } from '../../src/domain/energy-flow.js';
import type { DeviceStateEvent } from '../../src/domain/events.js';
import type { DeviceReleasedEvent } from '../../src/projection/device-released.js';
import { refreshFlow } from '../../src/projection/telemetry-fold.js';
import { decodeIndexEntry, encodeIndexEntry } from '../../src/read-model/device-index-entry.js';
import { createInstallationStore } from '../../src/read-model/installation-store.js';
import {
  createKeys,
  deviceIndexKey,
  deviceTimesKey,
  parseDeviceField,
} from '../../src/read-model/keys.js';
import { duplicateConnection, type RedisClient } from '../../src/read-model/redis-connection.js';
import {
  createTelemetryStore,
  mapCache,
  type TelemetryStore,
} from '../../src/read-model/telemetry-store.js';
import { dropPrefix, testRedis, uniqueId } from '../support/stack.js';

// The telemetry write path on real RedisClient: what a batch reads (only what memory lacks) and
// writes (one script per installation, guarded by its revision), the precise times kept
// beside the records, data written by the previous version, and other writers racing the
// owner's in-memory copy (the deletion script, a former owner after a rebalance).

const prefix = `${uniqueId('devstore')}:`;
const keys = createKeys(prefix);
const WINDOW = 3600;
const NOW = Date.now();
const ctx = { nowMs: NOW, futureSkewSeconds: 60, onlineWindowSeconds: WINDOW };
let redis: RedisClient;
let conn: RedisClient;
let writes = 0;
const released: DeviceReleasedEvent[] = [];

const event = (
  installationId: number,
  category: DeviceCategory,
  deviceId: number,
  atMs: number,
  state: Record<string, unknown>,
): DeviceStateEvent => ({
  type: 'device.state',
  installationId,
  category,
  deviceId,
  observedAt: new Date(atMs).toISOString(),
  state: state as DeviceStateEvent['state'],
});

const creating: Record<DeviceCategory, Record<string, unknown>> = {
  inverter: { powerAc: 1500.4, powerDcPv1: 700.25, powerDcPv2: 800 },
  battery: { powerDc: -300.5, soe: 55.5, ratedEnergy: 10 },
  energyMeter: { options: 'x', powerAc: 123.4 },
  evCharger: { mode: 'eco', supportsBiDirectionalCharging: false, powerAc: 7000 },
  relay: { relayCount: 1, currentState: [true], desiredState: [null] },
  boiler: { boilerMode: 'auto', powerAc: 2000 },
};

const owner = () =>
  createTelemetryStore({
    conn,
    keys,
    cache: mapCache(),
    sendReleases: async (events) => void released.push(...events),
  });
let store: TelemetryStore;

/** One pass as the projector runs it; counts the socket writes (round trips) it took. */
async function batch(events: DeviceStateEvent[], by = store): Promise<number> {
  const before = writes;
  const result = await by.pass(events, ctx);
  expect(result.redo).toEqual([]);
  expect(result.outcomes.map((o) => o?.kind)).toEqual(events.map(() => 'applied'));
  return writes - before;
}

/** The flow computeEnergyFlow gives on the stored records. */
async function flowFromRecords(id: number) {
  const hash = await redis.hgetall(keys.devices(id));
  const devices = Object.entries(hash).map(([field, json]) => ({
    category: parseDeviceField(field)?.category as DeviceCategory,
    record: JSON.parse(json) as DeviceRecord,
  }));
  return computeEnergyFlow(devices, NOW, WINDOW);
}

async function storedFlow(id: number) {
  const { data, validUntil } = await redis.hgetall(keys.flow(id));
  return { data, validUntil };
}

beforeAll(async () => {
  redis = testRedis();
  conn = duplicateConnection(redis);
  await conn.ping();
  // Count what the store sends: one socket write per round trip (a pipeline is one).
  const stream = (conn as unknown as { stream: { write: (...a: unknown[]) => boolean } }).stream;
  const write = stream.write.bind(stream);
  stream.write = (...args: unknown[]) => {
    writes++;
    return write(...args);
  };
  store = owner();
});
afterAll(async () => {
  conn?.disconnect();
  await dropPrefix(redis, prefix);
  redis?.disconnect();
});

describe('telemetry write path', () => {
  it('loads, claims new devices without reading their index, writes a first batch in three round trips, then writes only', async () => {
    const first = [1, 2, 3].flatMap((id) =>
      (Object.keys(creating) as DeviceCategory[]).map((c, n) =>
        event(id, c, id * 100 + n, NOW - 60_000, creating[c] as Record<string, unknown>),
      ),
    );
    // Load the cold installations, claim the devices the fold found new (no index read first),
    // write (with the flow schedule in the same pipeline).
    expect(await batch(first)).toBe(3);
    const live = [1, 2, 3].map((id) =>
      event(id, 'battery', id * 100 + 1, NOW - 1_000, { powerDc: id }),
    );
    // Held in memory: nothing to read, no index to touch, one pipelined write.
    expect(await batch(live)).toBe(1);
  });

  it('reads no device index for an installation that already holds the devices of its events', async () => {
    // A new owner (after a rebalance or a restart) meets installations 1-3 with empty memory.
    const live = [1, 2, 3].flatMap((id) =>
      (Object.keys(creating) as DeviceCategory[]).map((c, n) =>
        event(id, c, id * 100 + n, NOW - 500, {}),
      ),
    );
    // Load, then write: no third round trip to locate devices the loaded states hold.
    expect(await batch(live, owner())).toBe(2);
  });

  it('needs more round trips only for a device that moved, and releases it by message', async () => {
    await batch([event(5, 'battery', 500, NOW - 5_000, creating.battery)]);
    // The event names 6: the device's index entry says 5, its record is carried on. Load 6,
    // claim the device as new (refused: the entry says 5, and comes back), read its record in
    // 5, claim it from 5, write.
    expect(await batch([event(6, 'battery', 500, NOW - 4_000, { powerDc: 1 })])).toBe(5);
    expect(JSON.parse((await redis.hget(keys.devices(6), 'battery:500')) as string)).toMatchObject({
      installationId: 6,
      soe: 55.5,
      powerDc: 1,
    });
    expect(decodeIndexEntry(await redis.get(deviceIndexKey(keys, 'battery:500')))?.inst).toBe(6);
    expect(released).toContainEqual({
      type: 'device.released',
      installationId: 5,
      category: 'battery',
      deviceId: 500,
      atMs: NOW - 4_000,
      to: 6,
    });
    // Applied by 5's owner, in 5's order: the device leaves 5, and its flow.
    const release = released.find((r) => r.installationId === 5) as DeviceReleasedEvent;
    await store.pass([release], ctx);
    expect(await redis.hkeys(keys.devices(5))).toEqual([]);
    expect(Object.keys(await redis.hgetall(deviceTimesKey(keys, 5)))).toEqual(['#rev']);
    expect(JSON.parse((await storedFlow(5)).data as string)).toBeNull();
  });

  it('folds a batch again from what Redis holds when a device turns out to live elsewhere', async () => {
    await batch([event(40, 'battery', 4000, NOW - 9_000, creating.battery)]);
    await batch([event(41, 'battery', 4100, NOW - 9_000, creating.battery)]);
    const removal = {
      type: 'device.removed',
      installationId: 41,
      category: 'battery',
      deviceId: 4100,
      occurredAt: new Date(NOW - 3_000).toISOString(),
    } as const;
    // The first fold removes 4100 from 41 and takes 4000 as new; the claim finds it in 40, so
    // the batch is folded again, and the removal must still delete what 41 stores.
    const result = await store.pass(
      [removal, event(41, 'battery', 4000, NOW - 2_000, { powerDc: 3 })],
      ctx,
    );
    expect(result.outcomes.map((o) => o?.kind)).toEqual(['applied', 'applied']);
    expect(await redis.hkeys(keys.devices(41))).toEqual(['battery:4000']);
    expect(
      JSON.parse((await redis.hget(keys.devices(41), 'battery:4000')) as string),
    ).toMatchObject({ installationId: 41, soe: 55.5, powerDc: 3 });
  });

  it('a claim recorded by a batch that never wrote: the replay, claiming without a read, still releases', async () => {
    // A batch of 8 claimed battery:800 from 7 and stopped before its release and its write.
    await redis.set(
      deviceIndexKey(keys, 'battery:800'),
      encodeIndexEntry({ inst: 8, lastMs: NOW - 3_000, prev: 7, removedMs: null }),
    );
    await batch([event(8, 'battery', 800, NOW - 3_000, creating.battery)], owner());
    expect(released).toContainEqual({
      type: 'device.released',
      installationId: 7,
      category: 'battery',
      deviceId: 800,
      atMs: NOW - 3_000,
      to: 8,
    });
    expect(decodeIndexEntry(await redis.get(deviceIndexKey(keys, 'battery:800')))?.inst).toBe(8);
  });

  it('keeps precise times beside the records, and the flow equals the one from the records', async () => {
    const times = await redis.hgetall(deviceTimesKey(keys, 1));
    delete times['#rev'];
    const records = await redis.hgetall(keys.devices(1));
    expect(Object.keys(times).sort()).toEqual(Object.keys(records).sort());
    for (const [field, value] of Object.entries(times)) {
      expect(value).toMatch(/^\d+;\d+$/);
      const [first, last] = value.split(';').map(Number) as [number, number];
      const record = JSON.parse(records[field] as string) as DeviceRecord;
      expect([formatDateTime(first), formatDateTime(last)]).toEqual([
        record.firstSeenDate,
        record.lastSeenDate,
      ]);
    }
    for (const id of [1, 2, 3, 6]) {
      const expected = await flowFromRecords(id);
      expect(await storedFlow(id)).toEqual({
        data: serializeEnergyFlow(expected.data),
        validUntil: String(expected.validUntilMs),
      });
    }
  });

  it('reads records the previous version wrote (no precise times) and counts them', async () => {
    const id = 9;
    const old = applyDeviceState(
      null,
      event(id, 'inverter', 900, NOW - 30_000, { powerAc: 4000 }),
      ctx,
    );
    if (old.kind !== 'applied') throw new Error('not applied');
    await redis.hset(keys.devices(id), 'inverter:900', serializeDevice('inverter', old.record));
    await batch([event(id, 'battery', 901, NOW - 1_000, creating.battery)]);
    expect(JSON.parse((await storedFlow(id)).data as string)).toMatchObject({
      inverterPower: 4000,
      batteryPower: -301,
    });
    await batch([event(id, 'battery', 901, NOW - 500, { powerDc: 10 })]);
    expect(JSON.parse((await storedFlow(id)).data as string)).toMatchObject({
      inverterPower: 4000,
      batteryPower: 10,
    });
  });

  it('reads the precise times an earlier release stored with flow inputs after them', async () => {
    const id = 11;
    // Observed at .700 of a second: the record's dates say .000.
    const lastMs = Math.floor(NOW / 1000) * 1000 - 30_000 + 700;
    const old = applyDeviceState(null, event(id, 'boiler', 1100, lastMs, creating.boiler), ctx);
    if (old.kind !== 'applied') throw new Error('not applied');
    await redis.hset(keys.devices(id), 'boiler:1100', serializeDevice('boiler', old.record));
    await redis.hset(deviceTimesKey(keys, id), 'boiler:1100', `${lastMs};${lastMs};${lastMs},2000`);
    // Within the same second but before the precise time: stale (it lowers the first sight).
    const result = await store.pass([event(id, 'boiler', 1100, lastMs - 300, { powerAc: 1 })], ctx);
    expect(result.outcomes[0]?.kind).toBe('stale');
    await batch([event(id, 'boiler', 1100, lastMs + 100, { powerAc: 3 })]);
    expect(await redis.hget(deviceTimesKey(keys, id), 'boiler:1100')).toBe(
      `${lastMs - 300};${lastMs + 100}`,
    );
    expect(JSON.parse((await storedFlow(id)).data as string)).toMatchObject({ boilerPower: 3 });
  });

  it('recomputes an expired flow from memory, guarded like any write', async () => {
    const id = 10;
    const aged = owner();
    await batch([event(id, 'boiler', 1000, NOW - 30_000, creating.boiler)], aged);
    const [state] = (await aged.load([id])).values();
    if (!state) throw new Error('no state');
    const later = NOW + WINDOW * 1000;
    const write = refreshFlow(state, { nowMs: later, onlineWindowSeconds: WINDOW });
    expect(write?.flow).toEqual({ data: 'null', validUntilMs: 0 });
    expect(await aged.write(write ? [write] : [])).toEqual(new Set());
    expect(await storedFlow(id)).toEqual({ data: 'null', validUntil: '0' });
  });
});

describe('memory after a write that did not land', () => {
  /** Makes the installation's writes fail before they change anything; returns the repair. */
  async function failWrites(id: number): Promise<() => Promise<void>> {
    const fi = deviceTimesKey(keys, id);
    // The write script's first command reads this hash: a string there makes it err.
    await redis.rename(fi, `${fi}:aside`);
    await redis.set(fi, 'not a hash');
    return async () => {
      await redis.del(fi);
      await redis.rename(`${fi}:aside`, fi);
    };
  }

  it('reads an installation back when its write failed: a removal retried still deletes', async () => {
    const id = 30;
    await batch([event(id, 'battery', 3000, NOW - 10_000, creating.battery)]);
    const repair = await failWrites(id);
    const removal = {
      type: 'device.removed',
      installationId: id,
      category: 'battery',
      deviceId: 3000,
      occurredAt: new Date(NOW - 5_000).toISOString(),
    } as const;
    await expect(store.pass([removal], ctx)).rejects.toThrow(/WRONGTYPE/);
    await repair();
    // The retry folds from what Redis holds, not from the copy the failed fold had changed.
    const retried = await store.pass([removal], ctx);
    expect(retried.outcomes[0]?.kind).toBe('applied');
    expect(await redis.hkeys(keys.devices(id))).toEqual([]);
    expect(JSON.parse((await storedFlow(id)).data as string)).toBeNull();
  });

  it('reads an installation back when its write failed: a live update retried is written', async () => {
    const id = 31;
    await batch([event(id, 'battery', 3100, NOW - 10_000, creating.battery)]);
    const repair = await failWrites(id);
    const live = event(id, 'battery', 3100, NOW - 5_000, { powerDc: 42 });
    await expect(store.pass([live], ctx)).rejects.toThrow(/WRONGTYPE/);
    await repair();
    await batch([live]);
    const record = JSON.parse((await redis.hget(keys.devices(id), 'battery:3100')) as string);
    expect(record).toMatchObject({ powerDc: 42, lastSeenDate: expect.any(String) });
    expect(JSON.parse((await storedFlow(id)).data as string)).toMatchObject({ batteryPower: 42 });
  });
});

describe('other writers racing the owner', () => {
  it('refuses the stale copy after the deletion script ran; the refold brings nothing back', async () => {
    const id = 20;
    const installations = createInstallationStore({ conn: redis, keys });
    await batch([event(id, 'battery', 2000, NOW - 10_000, creating.battery)]);
    // The owner holds revision 1; the deletion bumps it behind its back.
    await installations.remove(id, NOW - 5_000);
    const result = await store.pass([event(id, 'battery', 2000, NOW - 7_000, { powerDc: 5 })], ctx);
    expect(result.redo).toEqual([0]);
    expect(await redis.hkeys(keys.devices(id))).toEqual([]);
    // Folded again on the reloaded state: older than the deletion, so stale.
    const again = await store.pass([event(id, 'battery', 2000, NOW - 7_000, { powerDc: 5 })], ctx);
    expect(again.redo).toEqual([]);
    expect(again.outcomes[0]?.kind).toBe('stale');
    expect(await redis.hkeys(keys.devices(id))).toEqual([]);
  });

  it('refuses a former owner writing after a rebalance: state never moves backwards', async () => {
    const id = 21;
    const former = owner();
    const current = owner();
    await batch([event(id, 'battery', 2100, NOW - 10_000, creating.battery)], former);
    // The partition moved: the new owner loads and applies a newer event.
    await batch([event(id, 'battery', 2100, NOW - 2_000, { powerDc: 2 })], current);
    // The former owner, still holding its copy, writes an event it had in hand.
    const late = await former.pass([event(id, 'battery', 2100, NOW - 5_000, { powerDc: 5 })], ctx);
    expect(late.redo).toEqual([0]);
    const record = JSON.parse((await redis.hget(keys.devices(id), 'battery:2100')) as string);
    expect(record).toMatchObject({ powerDc: 2 });
    // Refolded on what RedisClient holds, the late event is stale.
    const again = await former.pass([event(id, 'battery', 2100, NOW - 5_000, { powerDc: 5 })], ctx);
    expect(again.outcomes[0]?.kind).toBe('stale');
  });

  it('refuses a record older than the stored one even at the expected revision', async () => {
    const id = 22;
    const a = owner();
    await batch([event(id, 'battery', 2200, NOW - 1_000, creating.battery)], a);
    const [state] = (await a.load([id])).values();
    if (!state) throw new Error('no state');
    const entry = state.devices.get('battery:2200');
    if (!entry) throw new Error('no device');
    const older = { ...entry, meta: { ...entry.meta, lastSeenMs: NOW - 9_000 } };
    const refused = await a.write([
      {
        id,
        expectedRevision: state.revision,
        set: new Map([['battery:2200', older]]),
        removed: new Set(),
        flow: null,
        next: state,
      },
    ]);
    expect(refused).toEqual(new Set([id]));
  });
});
