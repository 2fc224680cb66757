import { describe, expect, it } from 'vitest';
import {
  DEVICE_CATEGORIES,
  type DeviceCategory,
  REQUIRED_ON_CREATE,
} from '../../src/domain/device-fields.js';
import {
  applyDeviceState,
  type DeviceMeta,
  type DeviceRecord,
} from '../../src/domain/device-record.js';
import { computeEnergyFlow } from '../../src/domain/energy-flow.js';
import { parseInstallationsMessage, parseTelemetryMessage } from '../../src/domain/event-parse.js';
import type { DeviceStateEvent } from '../../src/domain/events.js';
import { createInstallationProfile } from '../../tools/sim/installations.js';
import { createRng } from '../../tools/sim/random.js';
import { createSimulation, type Round } from '../../tools/sim/simulation.js';
import { initialSiteState, stepSite } from '../../tools/sim/site.js';
import { createSitePlan } from '../../tools/sim/site-plan.js';
import { clearSkyFraction } from '../../tools/sim/solar.js';

const START = Date.UTC(2025, 5, 21, 4, 0, 0); // a June morning in Europe, night in the Americas

function run(
  options: { installations: number; seed?: number; offlineFraction?: number },
  steps: number,
  stepMs: number,
) {
  const sim = createSimulation({
    installations: options.installations,
    seed: options.seed ?? 1,
    offlineFraction: options.offlineFraction ?? 0,
    startMs: START,
  });
  const rounds: Round[] = [];
  for (let s = 0; s < steps; s++) {
    for (let i = 0; i < options.installations; i++) rounds.push(sim.nextRound(START + s * stepMs));
  }
  return { sim, rounds };
}

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

describe('simulator: site physics', () => {
  it('keeps the energy balance exactly at every step', () => {
    const { rounds } = run({ installations: 40 }, 120, 60_000);
    for (const { snapshot: s } of rounds) {
      expect(sum(s.inverterAcW)).toBe(sum(s.pvW) - s.batteryW);
      expect(s.meterW).toBe(sum(s.inverterAcW) - s.houseW - s.evW - s.boilerW);
      expect(s.houseW).toBeGreaterThan(0);
    }
    // The fleet does interesting things: sun, exports, imports, EV sessions, battery both ways.
    const snaps = rounds.map((r) => r.snapshot);
    expect(snaps.some((s) => sum(s.pvW) > 0)).toBe(true);
    expect(snaps.some((s) => s.meterW > 0)).toBe(true);
    expect(snaps.some((s) => s.meterW < 0)).toBe(true);
    expect(snaps.some((s) => s.evW > 0)).toBe(true);
    expect(snaps.some((s) => s.boilerW > 0)).toBe(true);
    expect(snaps.some((s) => s.batteryW > 0)).toBe(true);
    expect(snaps.some((s) => s.batteryW < 0)).toBe(true);
  });

  it('keeps every battery between 0 and 100 % (and its own bounds) over three days', () => {
    const sites = Array.from({ length: 60 }, (_, i) => {
      const plan = createSitePlan(createInstallationProfile(3, i + 1), {
        seed: 3,
        offlineFraction: 0,
      });
      const rng = createRng(i);
      return { plan, rng, state: initialSiteState(plan, rng), min: 100, max: 0 };
    });
    const withBattery = sites.filter((s) => s.plan.battery);
    expect(withBattery.length).toBeGreaterThan(10);
    for (let t = START; t < START + 3 * 86_400_000; t += 60_000) {
      for (const site of withBattery) {
        const battery = site.plan.battery;
        if (!battery) continue;
        const { soe } = stepSite(site.plan, site.state, t, site.rng);
        if (soe < 0 || soe > 100 || soe < battery.minSoe - 1e-9 || soe > battery.maxSoe + 1e-9) {
          throw new Error(`soe ${soe} outside ${battery.minSoe}..${battery.maxSoe}`);
        }
        site.min = Math.min(site.min, soe);
        site.max = Math.max(site.max, soe);
      }
    }
    // The state of energy really integrates: batteries swing through most of their range.
    const swings = withBattery.map((s) => s.max - s.min);
    expect(Math.max(...swings)).toBeGreaterThan(60);
  });

  it('follows the sun: nothing at night, production around solar noon', () => {
    const berlinNoon = Date.UTC(2025, 5, 21, 11, 6);
    const berlinMidnight = Date.UTC(2025, 5, 21, 23, 6);
    expect(clearSkyFraction(52.52, 13.4, berlinNoon)).toBeGreaterThan(0.7);
    expect(clearSkyFraction(52.52, 13.4, berlinMidnight)).toBe(0);
    expect(clearSkyFraction(-31.95, 115.86, Date.UTC(2025, 5, 21, 4, 20))).toBeGreaterThan(0.3);
  });
});

describe('simulator: events', () => {
  it('produces telemetry the domain accepts, and the flow it computes matches the physics', () => {
    const { sim, rounds } = run({ installations: 30 }, 30, 1_000);
    const records = new Map<
      string,
      { record: DeviceRecord; meta: DeviceMeta; category: DeviceCategory; installationId: number }
    >();
    const seenCategories = new Set<DeviceCategory>();
    for (const round of rounds) {
      for (const event of round.events) {
        const parsed = parseTelemetryMessage(JSON.stringify(event));
        if (!parsed.ok) throw new Error(`${parsed.reason}: ${parsed.detail}`);
        expect(parsed.droppedKeys).toEqual([]);
        const id = `${event.category}:${event.deviceId}`;
        const current = records.get(id);
        const applied = applyDeviceState(
          current?.record ?? null,
          parsed.event as DeviceStateEvent,
          { nowMs: START + 60_000, futureSkewSeconds: 300 },
          current?.meta,
        );
        if (applied.kind !== 'applied') throw new Error(`not applied: ${JSON.stringify(applied)}`);
        expect(applied.nulledFields).toEqual([]);
        records.set(id, {
          record: applied.record,
          meta: applied.meta,
          category: event.category,
          installationId: event.installationId,
        });
        seenCategories.add(event.category);
      }
    }
    expect([...seenCategories].sort()).toEqual([...DEVICE_CATEGORIES].sort());

    const last = new Map(rounds.map((r) => [r.installationId, r.snapshot]));
    for (const site of sim.sites) {
      const snap = last.get(site.plan.installationId);
      if (!snap) throw new Error('no snapshot');
      const devices = [...records.values()].filter(
        (r) => r.installationId === site.plan.installationId,
      );
      const flow = computeEnergyFlow(devices, snap.atMs, 300);
      expect(flow.data).not.toBeNull();
      expect(flow.data?.gridPower).toBe(0 - snap.meterW);
      expect(flow.data?.housePower).toBe(snap.houseW);
      expect(flow.data?.evChargerPower).toBe(site.plan.evCharger ? snap.evW : null);
      expect(flow.data?.boilerPower).toBe(site.plan.boiler ? snap.boilerW : null);
      expect(flow.data?.batteryPower).toBe(site.plan.battery ? snap.batteryW : null);
      expect(flow.data?.solarPower).toBe(site.plan.inverters.length > 0 ? sum(snap.pvW) : null);
    }
  });

  it('sends the required and identity fields first, then only what changed', () => {
    const { rounds } = run({ installations: 25 }, 3, 1_000);
    const first = new Map<string, DeviceStateEvent>();
    const later: DeviceStateEvent[] = [];
    for (const event of rounds.flatMap((r) => r.events)) {
      const id = `${event.category}:${event.deviceId}`;
      if (first.has(id)) later.push(event);
      else first.set(id, event);
    }
    expect(first.size).toBeGreaterThan(50);
    for (const event of first.values()) {
      for (const field of [
        ...REQUIRED_ON_CREATE[event.category],
        'manufacturer',
        'model',
        'serialNumber',
        'version',
      ]) {
        expect(event.state, `${event.category} ${field}`).toHaveProperty(field);
      }
    }
    expect(later.length).toBeGreaterThan(50);
    for (const event of later) {
      expect(event.state).not.toHaveProperty('manufacturer');
      expect(event.state).not.toHaveProperty('serialNumber');
    }
    // A measurement that did not change is not repeated.
    expect(later.some((e) => e.category === 'inverter' && !('status' in e.state))).toBe(true);
  });

  it('reports inverter status as SunSpec integers: MPPT by day, SLEEPING at night', () => {
    const { rounds } = run({ installations: 40 }, 1, 1_000);
    const statuses = new Map<boolean, Set<unknown>>([
      [true, new Set()],
      [false, new Set()],
    ]);
    for (const round of rounds) {
      const sunUp = round.snapshot.pvW.some((w) => w > 0);
      for (const e of round.events)
        if (e.category === 'inverter') statuses.get(sunUp)?.add(e.state.status);
    }
    expect([...(statuses.get(true) ?? [])]).toEqual([4]);
    expect([...(statuses.get(false) ?? [])]).toEqual([2]);
  });

  it('is deterministic for a seed, and different for another seed', () => {
    const events = (seed: number) =>
      run({ installations: 10, seed, offlineFraction: 0.2 }, 20, 5_000).rounds.flatMap(
        (r) => r.events,
      );
    expect(events(7)).toEqual(events(7));
    expect(events(7)).not.toEqual(events(8));
  });

  it('lets the offline fraction of devices fall silent', () => {
    const late = START + 120_000;
    const all = createSimulation({
      installations: 20,
      seed: 1,
      offlineFraction: 1,
      startMs: START,
    });
    expect(all.nextRound(START).events.length).toBeGreaterThan(0);
    expect(all.silentDevices(late)).toBe(all.deviceCount);
    expect(all.nextRound(late).events).toEqual([]);
    const none = createSimulation({
      installations: 20,
      seed: 1,
      offlineFraction: 0,
      startMs: START,
    });
    expect(none.silentDevices(late)).toBe(0);
    const some = createSimulation({
      installations: 200,
      seed: 1,
      offlineFraction: 0.1,
      startMs: START,
    });
    const share = some.silentDevices(late) / some.deviceCount;
    expect(share).toBeGreaterThan(0.04);
    expect(share).toBeLessThan(0.2);
  });

  it('upserts valid installations with stable ids, whatever the fleet size', () => {
    const sim = createSimulation({
      installations: 50,
      seed: 1,
      offlineFraction: 0,
      startMs: START,
    });
    const events = sim.installationEvents(START);
    expect(events.map((e) => e.installation.id)).toEqual(
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    for (const event of events) {
      const parsed = parseInstallationsMessage(
        JSON.stringify(event),
        String(event.installation.id),
      );
      if (!parsed.ok) throw new Error(`${parsed.reason}: ${parsed.detail}`);
      expect(parsed.droppedKeys).toEqual([]);
    }
    expect(new Set(events.map((e) => e.installation.type))).toEqual(
      new Set(['private', 'commercial']),
    );
    expect(events.some((e) => e.companyId === null)).toBe(true);
    expect(events.some((e) => e.companyId !== null)).toBe(true);
    expect(createInstallationProfile(1, 7)).toEqual(createInstallationProfile(1, 7));
    expect(events[6]?.installation).toEqual(createInstallationProfile(1, 7).installation);
  });
});
