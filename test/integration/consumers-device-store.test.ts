import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { planTelemetryBatch } from '../../consumers/telemetry-batch.js';
import { formatDateTime } from '../../src/domain/date-time.js';
import type { DeviceCategory } from '../../src/domain/device-fields.js';
import {
  applyDeviceState,
  type DeviceRecord,
  serializeDevice,
} from '../../src/domain/device-record.js';
import { computeEnergyFlow, serializeEnergyFlow } from '../../src/domain/energy-flow.js';
import type { DeviceStateEvent } from '../../src/domain/events.js';
import { createDeviceStore, type DeviceStore } from '../../src/read-model/device-store.js';
import { createFlowStore } from '../../src/read-model/flow-store.js';
import { createKeys, flowInputsKey, parseDeviceField } from '../../src/read-model/keys.js';
import { dropPrefix, testRedis, uniqueId } from '../support/stack.js';

// The device store on real Redis: what a batch reads (only the devices it touches, in as few
// round trips as the batch allows), the compact flow inputs it keeps beside the records, and
// data written before those inputs existed.

const prefix = `${uniqueId('devstore')}:`;
const keys = createKeys(prefix);
const WINDOW = 3600;
const NOW = Date.now();
let redis: Redis;
let conn: Redis;
let store: DeviceStore;
let writes = 0;

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

/** One batch as the projector runs it; counts the socket writes (round trips) it took. */
async function batch(events: DeviceStateEvent[]): Promise<number> {
  const origins = new Map<string, Set<number>>();
  for (const e of events) {
    const field = `${e.category}:${e.deviceId}`;
    origins.set(field, (origins.get(field) ?? new Set()).add(e.installationId));
  }
  const before = writes;
  const plan = await store.transact(
    [...origins.keys()],
    [...new Set(events.map((e) => e.installationId))],
    (view) => planTelemetryBatch(view, events, { nowMs: NOW, futureSkewSeconds: 60 }),
    () => NOW,
    origins,
  );
  expect(plan.outcomes.every((o) => o.kind === 'applied')).toBe(true);
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
  return redis.hgetall(keys.flow(id));
}

beforeAll(async () => {
  redis = testRedis();
  conn = redis.duplicate();
  await conn.ping();
  // Count what the store sends: one socket write per round trip (a pipeline or MULTI is one).
  const stream = (conn as unknown as { stream: { write: (...a: unknown[]) => boolean } }).stream;
  const write = stream.write.bind(stream);
  stream.write = (...args: unknown[]) => {
    writes++;
    return write(...args);
  };
  store = createDeviceStore({ conn, keys, onlineWindowSeconds: WINDOW });
});
afterAll(async () => {
  conn?.disconnect();
  await dropPrefix(redis, prefix);
  redis?.disconnect();
});

describe('device store', () => {
  it('reads and writes a batch over several installations in two round trips', async () => {
    const first = [1, 2, 3].flatMap((id) =>
      (Object.keys(creating) as DeviceCategory[]).map((c, n) =>
        event(id, c, id * 100 + n, NOW - 60_000, creating[c] as Record<string, unknown>),
      ),
    );
    expect(await batch(first)).toBe(2);
    const live = [1, 2, 3].map((id) =>
      event(id, 'battery', id * 100 + 1, NOW - 1_000, { powerDc: id }),
    );
    expect(await batch(live)).toBe(2);
  });

  it('needs one more round trip only for a device that moved between installations', async () => {
    expect(await batch([event(5, 'battery', 500, NOW - 5_000, creating.battery)])).toBe(2);
    // The event names 6: the device is found in 5 through its index entry, read in a second trip.
    expect(await batch([event(6, 'battery', 500, NOW - 4_000, { powerDc: 1 })])).toBe(3);
    expect(await redis.hkeys(keys.devices(5))).toEqual([]);
    expect(await redis.hkeys(keys.devices(6))).toEqual(['battery:500']);
    expect(await redis.hkeys(flowInputsKey(keys, 5))).toEqual([]);
    expect(await redis.hkeys(flowInputsKey(keys, 6))).toEqual(['battery:500']);
  });

  it('keeps compact flow inputs beside the records, and the flow equals the one from the records', async () => {
    const inputs = await redis.hgetall(flowInputsKey(keys, 1));
    expect(Object.keys(inputs).sort()).toEqual((await redis.hkeys(keys.devices(1))).sort());
    for (const value of Object.values(inputs)) expect(value.length).toBeLessThan(60);
    for (const id of [1, 2, 3, 6]) {
      const expected = await flowFromRecords(id);
      expect(await storedFlow(id)).toEqual({
        data: serializeEnergyFlow(expected.data),
        validUntil: String(expected.validUntilMs),
      });
    }
  });

  it('computes from the records, and stores the inputs, where they were written before the inputs existed', async () => {
    const id = 9;
    // A device record as the previous version wrote it: devices hash only, no flow inputs.
    const old = applyDeviceState(
      null,
      event(id, 'inverter', 900, NOW - 30_000, { powerAc: 4000 }),
      {
        nowMs: NOW,
        futureSkewSeconds: 60,
      },
    );
    if (old.kind !== 'applied') throw new Error('not applied');
    await redis.hset(keys.devices(id), 'inverter:900', serializeDevice('inverter', old.record));
    await batch([event(id, 'battery', 901, NOW - 1_000, creating.battery)]);
    const flow = JSON.parse((await storedFlow(id)).data as string);
    expect(flow).toMatchObject({ inverterPower: 4000, batteryPower: -301 });
    expect(Object.keys(await redis.hgetall(flowInputsKey(keys, id))).sort()).toEqual([
      'battery:901',
      'inverter:900',
    ]);
    // The next batch takes the fast path and still counts the old device.
    await batch([event(id, 'battery', 901, NOW - 500, { powerDc: 10 })]);
    expect(JSON.parse((await storedFlow(id)).data as string)).toMatchObject({
      inverterPower: 4000,
      batteryPower: 10,
    });
  });

  it('lets the ageing sweep recompute such an installation from its records', async () => {
    const id = 10;
    const old = applyDeviceState(null, event(id, 'boiler', 1000, NOW - 30_000, creating.boiler), {
      nowMs: NOW,
      futureSkewSeconds: 60,
    });
    if (old.kind !== 'applied') throw new Error('not applied');
    await redis.hset(keys.devices(id), 'boiler:1000', serializeDevice('boiler', old.record));
    await redis.hset(keys.flow(id), { data: 'null', validUntil: '1' });
    const flows = createFlowStore({ conn: redis.duplicate(), keys, onlineWindowSeconds: WINDOW });
    expect(await flows.refresh(id, NOW)).toBe(true);
    expect(JSON.parse((await storedFlow(id)).data as string)).toMatchObject({
      boilerPower: 2000,
      lastUpdated: formatDateTime(Math.floor((NOW - 30_000) / 1000) * 1000),
    });
    expect(await redis.hkeys(flowInputsKey(keys, id))).toEqual(['boiler:1000']);
  });
});
