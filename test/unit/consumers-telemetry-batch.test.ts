import { describe, expect, it } from 'vitest';
import { planTelemetryBatch } from '../../consumers/telemetry-batch.js';
import type { TelemetryEvent } from '../../src/domain/events.js';
import type { TelemetryView } from '../../src/read-model/device-store.js';

const T0 = Date.parse('2026-01-01T12:00:00Z');
const clock = { nowMs: T0 + 60_000, futureSkewSeconds: 300 };
const iso = (ms: number) => new Date(ms).toISOString();
const emptyView = (): TelemetryView => ({
  index: new Map(),
  devices: new Map(),
  deletedAt: new Map(),
});

const battery = (
  inst: number,
  atMs: number,
  state: Record<string, number | null>,
): TelemetryEvent => ({
  type: 'device.state',
  installationId: inst,
  category: 'battery',
  deviceId: 7,
  observedAt: iso(atMs),
  state,
});

describe('planTelemetryBatch', () => {
  it('coalesces several events of one device into one write and one dirty installation', () => {
    const plan = planTelemetryBatch(
      emptyView(),
      [
        battery(1, T0, { soe: 10 }),
        battery(1, T0 + 1_000, { powerDc: 5 }),
        battery(1, T0 + 2_000, { soe: 30 }),
      ],
      clock,
    );
    expect(plan.outcomes.map((o) => o.kind)).toEqual(['applied', 'applied', 'applied']);
    const record = JSON.parse(plan.deviceWrites.get(1)?.get('battery:7') as string);
    expect(record).toMatchObject({
      soe: 30,
      powerDc: 5,
      firstSeenDate: '2026-01-01T12:00:00+00:00',
    });
    expect(plan.deviceWrites.get(1)?.size).toBe(1);
    expect([...plan.dirty]).toEqual([1]);
    expect(plan.indexWrites.get('battery:7')).toEqual({
      inst: 1,
      first: T0,
      last: T0 + 2_000,
      removed: null,
    });
  });

  it('marks older events stale and applies the later of equal ones', () => {
    const plan = planTelemetryBatch(
      emptyView(),
      [
        battery(1, T0 + 5_000, { soe: 1 }),
        battery(1, T0 + 1_000, { soe: 2 }),
        battery(1, T0 + 5_000, { soe: 3 }),
      ],
      clock,
    );
    expect(plan.outcomes.map((o) => o.kind)).toEqual(['applied', 'stale', 'applied']);
    expect(JSON.parse(plan.deviceWrites.get(1)?.get('battery:7') as string).soe).toBe(3);
  });

  it('moves a device: deletes it from the old installation and dirties both', () => {
    const plan = planTelemetryBatch(
      emptyView(),
      [battery(1, T0, { soe: 10 }), battery(2, T0 + 1_000, { powerDc: 1 })],
      clock,
    );
    expect(plan.outcomes[1]).toMatchObject({ kind: 'applied', moved: true });
    expect(plan.deviceWrites.get(1)?.get('battery:7')).toBeNull();
    expect(JSON.parse(plan.deviceWrites.get(2)?.get('battery:7') as string)).toMatchObject({
      installationId: 2,
      soe: 10,
    });
    expect([...plan.dirty].sort()).toEqual([1, 2]);
  });

  it('rejects future-dated and incomplete creations, reports nulled percents', () => {
    const relay: TelemetryEvent = {
      type: 'device.state',
      installationId: 1,
      category: 'relay',
      deviceId: 1,
      observedAt: iso(T0),
      state: { relayCount: 1 },
    };
    const plan = planTelemetryBatch(
      emptyView(),
      [battery(1, T0 + 3_600_000, { soe: 1 }), relay, battery(1, T0, { soe: 101, soh: -1 })],
      clock,
    );
    expect(plan.outcomes[0]).toMatchObject({ kind: 'rejected', reason: 'future_observed_at' });
    expect(plan.outcomes[1]).toMatchObject({ kind: 'rejected', reason: 'missing_required_fields' });
    expect(plan.outcomes[2]).toMatchObject({
      kind: 'applied',
      nulledPercentFields: ['soe', 'soh'],
    });
  });

  it('removes a device and ignores observations older than the removal', () => {
    const removal: TelemetryEvent = {
      type: 'device.removed',
      installationId: 1,
      category: 'battery',
      deviceId: 7,
      occurredAt: iso(T0 + 2_000),
    };
    const plan = planTelemetryBatch(
      emptyView(),
      [
        battery(1, T0, { soe: 1 }),
        removal,
        battery(1, T0 + 1_000, { soe: 2 }),
        battery(1, T0 + 3_000, { soe: 3 }),
      ],
      clock,
    );
    expect(plan.outcomes.map((o) => o.kind)).toEqual(['applied', 'applied', 'stale', 'applied']);
    const record = JSON.parse(plan.deviceWrites.get(1)?.get('battery:7') as string);
    expect(record).toMatchObject({ soe: 3, firstSeenDate: '2026-01-01T12:00:03+00:00' });
  });

  it('turns an error of pure code into a processing_error rejection for that event only', () => {
    const view = emptyView();
    view.devices.set(1, new Map([['battery:7', '{"not":"a record"}']]));
    const plan = planTelemetryBatch(
      view,
      [battery(1, T0, { soe: 1 }), { ...battery(1, T0, {}), deviceId: 8 }],
      clock,
    );
    expect(plan.outcomes[0]).toMatchObject({ kind: 'rejected', reason: 'processing_error' });
    expect(plan.outcomes[1]?.kind).toBe('applied');
  });

  it('treats events no newer than the installation deletion as stale', () => {
    const view: TelemetryView = { ...emptyView(), deletedAt: new Map([[1, T0 + 1_000]]) };
    const removal: TelemetryEvent = {
      type: 'device.removed',
      installationId: 1,
      category: 'battery',
      deviceId: 9,
      occurredAt: iso(T0 + 1_000),
    };
    const plan = planTelemetryBatch(
      view,
      [battery(1, T0 + 1_000, { soe: 1 }), removal, battery(1, T0 + 2_000, { soe: 2 })],
      clock,
    );
    expect(plan.outcomes.map((o) => o.kind)).toEqual(['stale', 'stale', 'applied']);
    expect(JSON.parse(plan.deviceWrites.get(1)?.get('battery:7') as string).soe).toBe(2);
  });

  it('says which events wrote to which installation and keeps the records it wrote', () => {
    const plan = planTelemetryBatch(
      emptyView(),
      [battery(1, T0, { soe: 1 }), battery(2, T0, { soe: 1 }), battery(2, T0 + 1, { soe: 2 })],
      clock,
    );
    expect(plan.touchedBy.get(1)).toEqual(new Set([0, 1]));
    expect(plan.touchedBy.get(2)).toEqual(new Set([1, 2]));
    const json = plan.deviceWrites.get(2)?.get('battery:7') as string;
    expect(plan.records.get(json)).toMatchObject({ soe: 2, installationId: 2 });
  });
});
