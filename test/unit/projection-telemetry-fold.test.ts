import { describe, expect, it } from 'vitest';
import type { TelemetryEvent } from '../../src/domain/events.js';
import type { DeviceReleasedEvent } from '../../src/projection/device-released.js';
import {
  type CarriedDevice,
  type DeviceIndexEntry,
  type InstallationState,
  initialState,
  NO_INDEX_ENTRY,
} from '../../src/projection/installation-state.js';
import {
  type FoldResult,
  foldTelemetry,
  type ProjectionEvent,
  refreshFlow,
} from '../../src/projection/telemetry-fold.js';

// The telemetry fold, given/when/then, without Redis: given the loaded states and index
// entries, when a batch of events is folded, then these outcomes and these writes.

const T0 = Date.parse('2026-01-01T12:00:00Z');
const ctx = { nowMs: T0 + 60_000, futureSkewSeconds: 300, onlineWindowSeconds: 3_600 };
const iso = (ms: number) => new Date(ms).toISOString();

const battery = (inst: number, atMs: number, state: Record<string, number | null>, id = 7) =>
  ({
    type: 'device.state',
    installationId: inst,
    category: 'battery',
    deviceId: id,
    observedAt: iso(atMs),
    state,
  }) as TelemetryEvent;
const removal = (inst: number, atMs: number): TelemetryEvent => ({
  type: 'device.removed',
  installationId: inst,
  category: 'battery',
  deviceId: 7,
  occurredAt: iso(atMs),
});
const released = (inst: number, atMs: number, to: number | null): DeviceReleasedEvent => ({
  type: 'device.released',
  installationId: inst,
  category: 'battery',
  deviceId: 7,
  atMs,
  to,
});

interface Given {
  states?: InstallationState[];
  index?: Record<string, Partial<DeviceIndexEntry>>;
  /** Records other installations hold, read on a miss. */
  carried?: Record<string, CarriedDevice>;
}
const when = (given: Given, events: ProjectionEvent[], at = ctx): FoldResult =>
  foldTelemetry(
    {
      // The fold takes the states it is given and updates them in place: each `when` gets its own.
      states: new Map((given.states ?? []).map((s) => [s.id, structuredClone(s)])),
      index: new Map(
        Object.entries(given.index ?? {}).map(([f, e]) => [f, { ...NO_INDEX_ENTRY, ...e }]),
      ),
      carried: new Map(Object.entries(given.carried ?? {})),
    },
    events,
    at,
  );
/** The state an installation reaches after a fold (its revision as if the write was acknowledged). */
const stateAfter = (result: FoldResult, id: number) => {
  const next = result.plan.installations.get(id)?.next;
  if (!next) throw new Error(`no write for installation ${id}`);
  return next;
};
const record = (state: InstallationState, field = 'battery:7') => state.devices.get(field)?.record;

describe('telemetry fold: one installation', () => {
  it('coalesces several events of one device into one write with one flow', () => {
    const r = when({}, [
      battery(1, T0, { soe: 10 }),
      battery(1, T0 + 1_000, { powerDc: 5 }),
      battery(1, T0 + 2_000, { soe: 30 }),
    ]);
    expect(r.outcomes.map((o) => o.kind)).toEqual(['applied', 'applied', 'applied']);
    const write = r.plan.installations.get(1);
    expect(write?.set.size).toBe(1);
    expect(write?.expectedRevision).toBe(0);
    expect(record(stateAfter(r, 1))).toMatchObject({
      soe: 30,
      powerDc: 5,
      firstSeenDate: '2026-01-01T12:00:00+00:00',
    });
    expect(JSON.parse(write?.flow?.data as string)).toMatchObject({
      batteryPower: 5,
      batterySoe: 30,
    });
    expect(write?.flow?.validUntilMs).toBe(T0 + 2_000 + 3_600_000);
    // A new device claims its index entry once.
    expect(r.plan.index.get('battery:7')).toEqual([{ kind: 'claim', inst: 1, atMs: T0 }]);
    expect(r.plan.releases).toEqual([]);
  });

  it('marks older events stale and applies the later of equal ones', () => {
    const r = when({}, [
      battery(1, T0 + 5_000, { soe: 1 }),
      battery(1, T0 + 1_000, { soe: 2 }),
      battery(1, T0 + 5_000, { soe: 3 }),
    ]);
    expect(r.outcomes.map((o) => o.kind)).toEqual(['applied', 'stale', 'applied']);
    expect(record(stateAfter(r, 1))?.soe).toBe(3);
  });

  it('continues from a loaded state: merges into the held record, writes no index entry', () => {
    const first = stateAfter(when({}, [battery(1, T0, { soe: 10, powerDc: 1 })]), 1);
    const r = when({ states: [first] }, [battery(1, T0 + 1_000, { powerDc: 2 })]);
    expect(record(stateAfter(r, 1))).toMatchObject({ soe: 10, powerDc: 2 });
    expect(r.plan.installations.get(1)?.expectedRevision).toBe(1);
    expect(r.plan.index.size).toBe(0);
  });

  it('writes nothing when every event is stale', () => {
    const first = stateAfter(
      when({}, [battery(1, T0, { soe: 10 }), battery(1, T0 + 5_000, { soe: 11 })]),
      1,
    );
    const r = when({ states: [first] }, [battery(1, T0 + 1_000, { soe: 1 })]);
    expect(r.outcomes.map((o) => o.kind)).toEqual(['stale']);
    expect(r.plan.installations.size).toBe(0);
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
    const r = when({}, [
      battery(1, T0 + 3_600_000, { soe: 1 }),
      relay,
      battery(1, T0, { soe: 101, soh: -1 }),
    ]);
    expect(r.outcomes[0]).toMatchObject({ kind: 'rejected', reason: 'future_observed_at' });
    expect(r.outcomes[1]).toMatchObject({ kind: 'rejected', reason: 'missing_required_fields' });
    expect(r.outcomes[2]).toMatchObject({ kind: 'applied', nulledFields: ['soe', 'soh'] });
  });

  it('removes a device and ignores observations older than the removal', () => {
    const r = when({}, [
      battery(1, T0, { soe: 1 }),
      removal(1, T0 + 2_000),
      battery(1, T0 + 1_000, { soe: 2 }),
      battery(1, T0 + 3_000, { soe: 3 }),
    ]);
    expect(r.outcomes.map((o) => o.kind)).toEqual(['applied', 'applied', 'stale', 'applied']);
    expect(record(stateAfter(r, 1))).toMatchObject({
      soe: 3,
      firstSeenDate: '2026-01-01T12:00:03+00:00',
    });
  });

  it('ignores an observation older than a removal recorded in the index', () => {
    const r = when({ index: { 'battery:7': { removedMs: T0 + 2_000 } } }, [
      battery(1, T0 + 1_000, { soe: 1 }),
    ]);
    expect(r.outcomes.map((o) => o.kind)).toEqual(['stale']);
  });

  it('treats events no newer than the installation deletion as stale', () => {
    const deleted = { ...initialState(1), deletedAtMs: T0 + 1_000 };
    const r = when({ states: [deleted] }, [
      battery(1, T0 + 1_000, { soe: 1 }),
      { ...removal(1, T0 + 1_000), deviceId: 9 },
      battery(1, T0 + 2_000, { soe: 2 }),
    ]);
    expect(r.outcomes.map((o) => o.kind)).toEqual(['stale', 'stale', 'applied']);
    expect(record(stateAfter(r, 1))?.soe).toBe(2);
  });

  it('dates a deletion at T: events at T - 1 ms and at T are stale, at T + 1 ms applied', () => {
    // docs/events.md: telemetry dated at or before the deletion is ignored, event or tombstone.
    const T = T0 + 1_000;
    const deleted = { ...initialState(1), deletedAtMs: T };
    for (const [atMs, kind] of [
      [T - 1, 'stale'],
      [T, 'stale'],
      [T + 1, 'applied'],
    ] as const) {
      const observed = when({ states: [deleted] }, [battery(1, atMs, { soe: 1 })]);
      expect(
        observed.outcomes.map((o) => o.kind),
        `observation at ${atMs - T}`,
      ).toEqual([kind]);
      const removed = when({ states: [deleted] }, [removal(1, atMs)]);
      expect(
        removed.outcomes.map((o) => o.kind),
        `removal at ${atMs - T}`,
      ).toEqual([kind]);
      // A device moving in from installation 2, where it was seen before.
      const moved = when(
        { states: [deleted], index: { 'battery:7': { inst: 2, lastMs: T - 10 } } },
        [battery(1, atMs, { soe: 1 })],
      );
      expect(
        moved.outcomes.map((o) => o.kind),
        `move at ${atMs - T}`,
      ).toEqual([kind]);
      expect(moved.plan.releases.length, `release at ${atMs - T}`).toBe(kind === 'applied' ? 1 : 0);
    }
  });

  it('turns an error of pure code into a processing_error rejection for that event only', () => {
    const unvalidated = {
      ...battery(1, T0, { soe: 1 }),
      observedAt: 'yesterday',
    } as TelemetryEvent;
    const r = when({}, [unvalidated, battery(1, T0, { soe: 1 }, 8)]);
    expect(r.outcomes[0]).toMatchObject({ kind: 'rejected', reason: 'processing_error' });
    expect(r.outcomes[1]?.kind).toBe('applied');
  });
});

describe('telemetry fold: device moves (docs/projection.md)', () => {
  const inA = (atMs: number) =>
    stateAfter(when({}, [battery(1, atMs, { soe: 40, powerDc: 500 })]), 1);

  it('claims a device met in another installation and releases it from the old one', () => {
    const r = when({ index: { 'battery:7': { inst: 1, lastMs: T0 } } }, [
      battery(2, T0 + 1_000, { soe: 50, powerDc: 700 }),
    ]);
    expect(r.outcomes[0]).toMatchObject({ kind: 'applied', moved: true });
    expect(record(stateAfter(r, 2))).toMatchObject({ installationId: 2, powerDc: 700 });
    // The record held by installation 1 moves with the device.
    const held = inA(T0).devices.get('battery:7');
    const carried = when(
      {
        index: { 'battery:7': { inst: 1, lastMs: T0 } },
        carried: held ? { 'battery:7': held } : {},
      },
      [battery(2, T0 + 1_000, { powerDc: 700 })],
    );
    expect(record(stateAfter(carried, 2))).toMatchObject({ soe: 40, powerDc: 700 });
    expect(record(stateAfter(carried, 2))?.firstSeenDate).toBe('2026-01-01T12:00:00+00:00');
    expect(r.plan.index.get('battery:7')).toEqual([{ kind: 'claim', inst: 2, atMs: T0 + 1_000 }]);
    expect(r.plan.releases).toEqual([released(1, T0 + 1_000, 2)]);
  });

  it('takes the device on an equal observedAt: the later event wins', () => {
    const r = when({ index: { 'battery:7': { inst: 1, lastMs: T0 } } }, [
      battery(2, T0, { soe: 50 }),
    ]);
    expect(r.outcomes[0]).toMatchObject({ kind: 'applied', moved: true });
    expect(r.plan.releases).toEqual([released(1, T0, 2)]);
  });

  it('ignores an observation older than the claim of another installation, but reports it seen', () => {
    const r = when({ index: { 'battery:7': { inst: 1, lastMs: T0 + 5_000 } } }, [
      battery(2, T0 + 1_000, { soe: 50 }),
    ]);
    expect(r.outcomes.map((o) => o.kind)).toEqual(['stale']);
    expect(r.plan.installations.size).toBe(0);
    // The holder lowers its firstSeenDate: the device existed then (events.md).
    expect(r.plan.releases).toEqual([{ ...released(1, T0 + 1_000, null), type: 'device.seen' }]);
  });

  it('lowers firstSeenDate on device.seen, and only to an earlier time', () => {
    const held = inA(T0 + 5_000);
    const seen = { ...released(1, T0 + 1_000, null), type: 'device.seen' as const };
    const r = when({ states: [held] }, [seen]);
    expect(r.outcomes.map((o) => o.kind)).toEqual(['internal']);
    expect(record(stateAfter(r, 1))).toMatchObject({
      firstSeenDate: '2026-01-01T12:00:01+00:00',
      lastSeenDate: '2026-01-01T12:00:05+00:00',
      soe: 40,
    });
    const later = when({ states: [stateAfter(r, 1)] }, [{ ...seen, atMs: T0 + 3_000 }]);
    expect(later.plan.installations.size).toBe(0);
  });

  it('drops the device on a release newer than what it holds', () => {
    const r = when({ states: [inA(T0)] }, [released(1, T0 + 1_000, 2)]);
    expect(r.outcomes.map((o) => o.kind)).toEqual(['internal']);
    expect(stateAfter(r, 1).devices.has('battery:7')).toBe(false);
    expect(r.plan.installations.get(1)?.removed).toEqual(new Set(['battery:7']));
    expect(JSON.parse(stateAfter(r, 1).flow.data)).toBeNull();
    // The new holder learns how early the device was seen here.
    expect(r.plan.releases).toEqual([{ ...released(2, T0, null), type: 'device.seen' }]);
  });

  it('a claim made before the old record was written still ends with the earliest firstSeenDate', () => {
    // Installation 2 claimed the device when installation 1's record was not yet in Redis.
    const claimed = when({ index: { 'battery:7': { inst: 1, lastMs: T0 } } }, [
      battery(2, T0 + 9_000, { soe: 50 }),
    ]);
    expect(record(stateAfter(claimed, 2))?.firstSeenDate).toBe('2026-01-01T12:00:09+00:00');
    const [release] = claimed.plan.releases;
    if (release === undefined) throw new Error('no release');
    const dropped = when({ states: [inA(T0)] }, [release]);
    const [seen] = dropped.plan.releases;
    if (seen === undefined) throw new Error('no device.seen');
    const after = when({ states: [stateAfter(claimed, 2)] }, [seen]);
    expect(record(stateAfter(after, 2))?.firstSeenDate).toBe('2026-01-01T12:00:00+00:00');
  });

  it('sends no device.seen when the device was removed, not moved (release to=null)', () => {
    const r = when({ states: [inA(T0)], index: { 'battery:7': { removedMs: T0 + 1_000 } } }, [
      released(1, T0 + 1_000, null),
    ]);
    expect(stateAfter(r, 1).devices.has('battery:7')).toBe(false);
    expect(r.plan.releases).toEqual([]);
  });

  it('sends no device.seen of a record older than a removal since', () => {
    // Installation 1 saw the device at T0; it was removed at T0+2s, then claimed again by 2.
    const r = when(
      {
        states: [inA(T0)],
        index: { 'battery:7': { inst: 2, lastMs: T0 + 9_000, removedMs: T0 + 2_000 } },
      },
      [released(1, T0 + 9_000, 2)],
    );
    expect(stateAfter(r, 1).devices.has('battery:7')).toBe(false);
    expect(r.plan.releases).toEqual([]);
  });

  it('ignores a device.seen that arrives after a removal and is older than it', () => {
    const held = inA(T0 + 9_000);
    const seen = { ...released(1, T0 + 1_000, null), type: 'device.seen' as const };
    const r = when({ states: [held], index: { 'battery:7': { inst: 1, removedMs: T0 + 5_000 } } }, [
      seen,
    ]);
    expect(r.plan.installations.size).toBe(0);
    // Seen after the removal still counts.
    const after = when(
      { states: [held], index: { 'battery:7': { inst: 1, removedMs: T0 + 5_000 } } },
      [{ ...seen, atMs: T0 + 6_000 }],
    );
    expect(record(stateAfter(after, 1))?.firstSeenDate).toBe('2026-01-01T12:00:06+00:00');
  });

  it("a device moved on twice: the first holder's firstSeenDate reaches the last holder", () => {
    // 1 -> 2 -> 3: 1 learns of the move to 2 only after 3 has claimed the device.
    const index = { 'battery:7': { inst: 3, lastMs: T0 + 9_000, prev: 2 } };
    const dropped = when({ states: [inA(T0)], index }, [released(1, T0 + 5_000, 2)]);
    expect(dropped.plan.releases).toEqual([{ ...released(3, T0, null), type: 'device.seen' }]);
    // A device.seen that reaches 2 after the device left is passed on to 3.
    const atTwo = when({ index }, [{ ...released(2, T0, null), type: 'device.seen' }]);
    expect(atTwo.plan.releases).toEqual([{ ...released(3, T0, null), type: 'device.seen' }]);
    const three = stateAfter(when({}, [battery(3, T0 + 9_000, { soe: 60 })]), 3);
    const atThree = when({ states: [three], index }, [...atTwo.plan.releases]);
    expect(record(stateAfter(atThree, 3))?.firstSeenDate).toBe('2026-01-01T12:00:00+00:00');
  });

  it('applies a redelivered release once: the second finds nothing to drop', () => {
    const once = stateAfter(when({ states: [inA(T0)] }, [released(1, T0 + 1_000, 2)]), 1);
    const again = when({ states: [once] }, [released(1, T0 + 1_000, 2)]);
    expect(again.plan.installations.size).toBe(0);
  });

  it('two moves out of order: keeps the newest observation and takes the device back', () => {
    // A saw it at T0+5s; B claimed it with an older observation (T0+3s) and released A.
    const r = when(
      { states: [inA(T0 + 5_000)], index: { 'battery:7': { inst: 2, lastMs: T0 + 3_000 } } },
      [released(1, T0 + 3_000, 2)],
    );
    // A keeps it: nothing to write there.
    expect(r.plan.installations.size).toBe(0);
    expect(r.plan.index.get('battery:7')).toEqual([{ kind: 'claim', inst: 1, atMs: T0 + 5_000 }]);
    // ... and B is told to let it go, with the observation that wins.
    expect(r.plan.releases).toEqual([released(2, T0 + 5_000, 1)]);
  });

  it('lets a device go on a release when a newer claim stands elsewhere', () => {
    const r = when(
      { states: [inA(T0 + 5_000)], index: { 'battery:7': { inst: 3, lastMs: T0 + 9_000 } } },
      [released(1, T0 + 3_000, 2)],
    );
    expect(stateAfter(r, 1).devices.has('battery:7')).toBe(false);
    expect(r.plan.releases).toEqual([{ ...released(3, T0 + 5_000, null), type: 'device.seen' }]);
  });

  it('sends the release again when a claim was recorded but its batch never finished', () => {
    const r = when({ index: { 'battery:7': { inst: 2, lastMs: T0 + 1_000, prev: 1 } } }, [
      battery(2, T0 + 1_000, { soe: 50 }),
    ]);
    expect(r.outcomes[0]).toMatchObject({ kind: 'applied', moved: false });
    expect(r.plan.releases).toEqual([released(1, T0 + 1_000, 2)]);
  });

  it('a move inside one batch: the later installation claims, the earlier one is released', () => {
    const r = when({}, [battery(1, T0, { soe: 10 }), battery(2, T0 + 1_000, { powerDc: 1 })]);
    expect(r.outcomes[1]).toMatchObject({ kind: 'applied', moved: true });
    // The record moves with the device: partial updates merge into what it reported.
    expect(record(stateAfter(r, 2))).toMatchObject({ installationId: 2, soe: 10, powerDc: 1 });
    expect(r.plan.releases).toEqual([released(1, T0 + 1_000, 2)]);
    expect(r.plan.index.get('battery:7')?.at(-1)).toEqual({
      kind: 'claim',
      inst: 2,
      atMs: T0 + 1_000,
    });
  });

  it('a removal naming another installation releases the device where it lives', () => {
    const r = when({ index: { 'battery:7': { inst: 1, lastMs: T0 } } }, [removal(2, T0 + 1_000)]);
    expect(r.outcomes.map((o) => o.kind)).toEqual(['applied']);
    expect(r.plan.releases).toEqual([released(1, T0 + 1_000, null)]);
    expect(r.plan.index.get('battery:7')).toEqual([{ kind: 'remove', inst: 2, atMs: T0 + 1_000 }]);
  });
});

describe('telemetry fold: time', () => {
  it('recomputes a flow whose only counted device went offline', () => {
    const online = stateAfter(when({}, [battery(1, T0, { soe: 80, powerDc: 250 })]), 1);
    expect(JSON.parse(online.flow.data)).toMatchObject({ batteryPower: 250 });
    const later = { ...ctx, nowMs: online.flow.validUntilMs + 1 };
    const write = refreshFlow(online, later);
    expect(write?.flow).toEqual({ data: 'null', validUntilMs: 0 });
    expect(write?.expectedRevision).toBe(online.revision);
    expect(refreshFlow(online, ctx)).toBeNull();
  });
});
