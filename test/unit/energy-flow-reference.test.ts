import { describe, expect, it } from 'vitest';
import { formatDateTime, parseDateTime } from '../../src/domain/date-time.js';
import { DEVICE_CATEGORIES, type DeviceCategory } from '../../src/domain/device-fields.js';
import type { DeviceRecord } from '../../src/domain/device-record.js';
import {
  computeEnergyFlow,
  type FlowDevice,
  serializeEnergyFlow,
} from '../../src/domain/energy-flow.js';
import { flowOfDevices } from '../../src/projection/flow-of-state.js';
import type { DeviceEntry } from '../../src/projection/installation-state.js';
import { createRng } from '../../tools/sim/random.js';

// computeEnergyFlow as it was before the flow inputs existed, kept verbatim (less exports) as
// the reference both paths must agree with.
const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);
function sum(values: ReadonlyArray<number | null>): number | null {
  let total: number | null = null;
  for (const v of values) if (v !== null) total = (total ?? 0) + v;
  return total;
}
function roundWhole(value: number | null): number | null {
  if (value === null) return null;
  return Math.sign(value) * Math.round(Math.abs(value)) + 0;
}
function solarOf(inverter: DeviceRecord): number | null {
  const total = num(inverter.powerDcPvTotal);
  if (total !== null) return total;
  return sum([1, 2, 3, 4, 5, 6].map((i) => num(inverter[`powerDcPv${i}`])));
}
function batterySoe(batteries: readonly DeviceRecord[]): number | null {
  const reporting = batteries.filter((b) => num(b.soe) !== null);
  if (reporting.length === 0) return null;
  const soes = reporting.map((b) => num(b.soe) as number);
  const weights = reporting.map((b) => num(b.ratedEnergy));
  if (weights.every((w) => w !== null && w > 0)) {
    const total = (weights as number[]).reduce((a, w) => a + w, 0);
    return soes.reduce((a, s, i) => a + s * (weights[i] as number), 0) / total;
  }
  return soes.reduce((a, s) => a + s, 0) / soes.length;
}
function lastSeenMsOf(record: DeviceRecord): number | null {
  return typeof record.lastSeenDate === 'string' ? parseDateTime(record.lastSeenDate) : null;
}
function referenceFlow(devices: readonly FlowDevice[], nowMs: number, windowSeconds: number) {
  const byCategory = new Map<DeviceCategory, DeviceRecord[]>();
  let latest = Number.NEGATIVE_INFINITY;
  let earliest = Number.POSITIVE_INFINITY;
  for (const { category, record } of devices) {
    const last = lastSeenMsOf(record);
    if (!(last !== null && nowMs - last <= windowSeconds * 1000)) continue;
    latest = Math.max(latest, last);
    earliest = Math.min(earliest, last);
    const list = byCategory.get(category) ?? [];
    list.push(record);
    byCategory.set(category, list);
  }
  if (latest === Number.NEGATIVE_INFINITY) return { data: null, validUntilMs: 0 };
  const of = (c: DeviceCategory) => byCategory.get(c) ?? [];
  const powerAc = (c: DeviceCategory) => sum(of(c).map((r) => num(r.powerAc)));
  const inverterPower = roundWhole(powerAc('inverter'));
  const meterPower = powerAc('energyMeter');
  const gridPower = roundWhole(meterPower === null ? null : -meterPower);
  const evChargerPower = roundWhole(powerAc('evCharger'));
  const boilerPower = roundWhole(powerAc('boiler'));
  const housePower =
    gridPower === null
      ? null
      : Math.max(0, (inverterPower ?? 0) + gridPower - (evChargerPower ?? 0) - (boilerPower ?? 0));
  const data = {
    inverterPower,
    solarPower: roundWhole(sum(of('inverter').map(solarOf))),
    batteryPower: roundWhole(sum(of('battery').map((r) => num(r.powerDc)))),
    batterySoe: roundWhole(batterySoe(of('battery'))),
    gridPower,
    housePower,
    evChargerPower,
    boilerPower,
    lastUpdated: formatDateTime(latest),
  };
  return { data, validUntilMs: earliest + windowSeconds * 1000 };
}

const NOW = Date.UTC(2026, 0, 1, 12, 0, 0);
const WINDOW = 300;
const rng = createRng(20260101);

/** A value as the records hold them: null, whole, fractional, tiny, huge, negative. */
function value(): number | null {
  switch (rng.int(0, 6)) {
    case 0:
      return null;
    case 1:
      return rng.int(-5_000, 5_000);
    case 2:
      return (rng.int(-1_000_000, 1_000_000) / 1_000) * 0.1;
    case 3:
      return rng.int(1, 9) * 1e-7;
    case 4:
      return rng.int(1, 9) * 1e21;
    case 5:
      return rng.int(0, 100) + 0.5;
    default:
      return 0;
  }
}

function randomRecord(category: DeviceCategory): DeviceRecord {
  const ago = rng.int(0, 7) === 0 ? null : rng.int(0, WINDOW + 30);
  const record: Record<string, unknown> = {
    id: rng.int(1, 1_000_000),
    lastSeenDate: ago === null ? null : formatDateTime(NOW - ago * 1000),
    powerAc: value(),
    powerDc: value(),
    soe: value(),
    ratedEnergy: rng.int(0, 3) === 0 ? rng.int(-1, 1) : value(),
    powerDcPvTotal: rng.int(0, 1) === 0 ? null : value(),
  };
  for (let i = 1; i <= 6; i++) record[`powerDcPv${i}`] = value();
  void category;
  return record as DeviceRecord;
}

function randomInstallation(): FlowDevice[] {
  return Array.from({ length: rng.int(0, 12) }, () => {
    const category = DEVICE_CATEGORIES[rng.int(0, DEVICE_CATEGORIES.length - 1)] as DeviceCategory;
    return { category, record: randomRecord(category) };
  });
}

describe('the energy flow against the reference', () => {
  it('computeEnergyFlow gives it on the records', () => {
    for (let n = 0; n < 2_000; n++) {
      const devices = randomInstallation();
      expect(computeEnergyFlow(devices, NOW, WINDOW)).toEqual(referenceFlow(devices, NOW, WINDOW));
    }
  });

  it("the fold's flowOfDevices gives it from the precise times kept beside the records", () => {
    for (let n = 0; n < 2_000; n++) {
      // A device the fold holds has always been seen.
      const devices = randomInstallation().filter((d) => d.record.lastSeenDate !== null);
      const held = new Map<string, DeviceEntry>(
        devices.map((d, i) => [
          `${d.category}:${i}`,
          {
            category: d.category,
            deviceId: i,
            record: d.record,
            meta: {
              firstSeenMs: 0,
              // The served date is this time cut to whole seconds.
              lastSeenMs:
                (parseDateTime(d.record.lastSeenDate as string) as number) + rng.int(0, 999),
            },
          },
        ]),
      );
      const reference = referenceFlow(devices, NOW, WINDOW);
      expect(flowOfDevices(held, NOW, WINDOW)).toEqual({
        data: serializeEnergyFlow(reference.data),
        validUntilMs: reference.validUntilMs,
      });
    }
  });
});
