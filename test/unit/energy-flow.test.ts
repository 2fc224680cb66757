import { describe, expect, it } from 'vitest';
import type { DeviceCategory } from '../../src/domain/device-fields.js';
import type { DeviceRecord } from '../../src/domain/device-record.js';
import {
  computeEnergyFlow,
  type FlowDevice,
  roundWhole,
  serializeEnergyFlow,
} from '../../src/domain/energy-flow.js';

const NOW = Date.UTC(2024, 2, 1, 12, 0, 0);
const WINDOW = 300;
const seen = (agoSeconds: number) =>
  `${new Date(NOW - agoSeconds * 1000).toISOString().slice(0, 19)}+00:00`;

const dev = (
  category: DeviceCategory,
  fields: Record<string, unknown>,
  agoSeconds = 10,
): FlowDevice => ({
  category,
  record: { lastSeenDate: seen(agoSeconds), ...fields } as DeviceRecord,
});
const flow = (devices: FlowDevice[]) => computeEnergyFlow(devices, NOW, WINDOW);
const data = (devices: FlowDevice[]) => {
  const d = flow(devices).data;
  if (!d) throw new Error('expected data');
  return d;
};

describe('computeEnergyFlow', () => {
  it('is null with validUntil 0 when there are no devices or none online', () => {
    expect(flow([])).toEqual({ data: null, validUntilMs: 0 });
    expect(flow([dev('inverter', { powerAc: 5 }, 301)])).toEqual({ data: null, validUntilMs: 0 });
    expect(flow([{ category: 'inverter', record: { lastSeenDate: null, powerAc: 5 } }])).toEqual({
      data: null,
      validUntilMs: 0,
    });
  });

  it('counts a device seen exactly the window ago, not one a second older', () => {
    expect(data([dev('inverter', { powerAc: 5 }, 300)]).inverterPower).toBe(5);
    const d = data([dev('inverter', { powerAc: 5 }, 301), dev('inverter', { powerAc: 7 }, 0)]);
    expect(d.inverterPower).toBe(7);
  });

  it('sums over reporting devices only and gives null, not 0, when none reports', () => {
    const d = data([
      dev('inverter', { powerAc: 1000.4 }),
      dev('inverter', { powerAc: null }),
      dev('inverter', { powerAc: 500 }),
      dev('relay', {}),
    ]);
    expect(d.inverterPower).toBe(1500);
    expect(d.batteryPower).toBeNull();
    expect(d.evChargerPower).toBeNull();
    expect(d.boilerPower).toBeNull();
    expect(d.gridPower).toBeNull();
    expect(d.batterySoe).toBeNull();
    expect(d.solarPower).toBeNull();
  });

  it('takes powerDcPvTotal, else the sum of the non-null PV inputs', () => {
    const d = data([
      dev('inverter', { powerDcPvTotal: 1000, powerDcPv1: 999 }),
      dev('inverter', { powerDcPvTotal: null, powerDcPv1: 200, powerDcPv2: null, powerDcPv6: 50 }),
      dev('inverter', { powerDcPvTotal: null, powerDcPv1: null }),
    ]);
    expect(d.solarPower).toBe(1250);
    expect(data([dev('inverter', { powerDcPvTotal: 0 })]).solarPower).toBe(0);
  });

  it('weights battery soe by ratedEnergy, or takes the plain mean if any lacks it', () => {
    const weighted = data([
      dev('battery', { soe: 100, ratedEnergy: 3000 }),
      dev('battery', { soe: 20, ratedEnergy: 1000 }),
      dev('battery', { soe: null, ratedEnergy: null }),
    ]);
    expect(weighted.batterySoe).toBe(80);
    const plain = data([
      dev('battery', { soe: 100, ratedEnergy: 3000 }),
      dev('battery', { soe: 20, ratedEnergy: 0 }),
    ]);
    expect(plain.batterySoe).toBe(60);
    expect(data([dev('battery', { soe: 33.3 }), dev('battery', { soe: 40 })]).batterySoe).toBe(37);
  });

  it('sums battery powerDc with its sign', () => {
    expect(
      data([dev('battery', { powerDc: -1200 }), dev('battery', { powerDc: 200 })]).batteryPower,
    ).toBe(-1000);
  });

  it('flips the meter sign for gridPower and derives housePower', () => {
    const d = data([
      dev('inverter', { powerAc: 3000 }),
      dev('energyMeter', { powerAc: 1000 }), // exporting 1000
      dev('evCharger', { powerAc: 500 }),
      dev('boiler', { powerAc: 200 }),
    ]);
    expect(d.gridPower).toBe(-1000);
    expect(d.housePower).toBe(3000 - 1000 - 500 - 200);
    expect(d.evChargerPower).toBe(500);
    expect(d.boilerPower).toBe(200);
  });

  it('treats missing parts of housePower as 0 and floors it at 0', () => {
    expect(data([dev('energyMeter', { powerAc: -800 })]).housePower).toBe(800);
    expect(
      data([dev('energyMeter', { powerAc: 100 }), dev('evCharger', { powerAc: 5000 })]).housePower,
    ).toBe(0);
  });

  it('gives a null housePower when gridPower is null', () => {
    const d = data([dev('inverter', { powerAc: 3000 }), dev('energyMeter', { powerAc: null })]);
    expect(d.gridPower).toBeNull();
    expect(d.housePower).toBeNull();
  });

  it('rounds every number to a whole number, symmetric around zero, never -0', () => {
    const d = data([
      dev('inverter', { powerAc: 0.4, powerDcPvTotal: 2.5 }),
      dev('energyMeter', { powerAc: 2.5 }),
      dev('battery', { powerDc: -0.4, soe: 55.5 }),
    ]);
    expect(d.inverterPower).toBe(0);
    expect(d.solarPower).toBe(3);
    expect(d.gridPower).toBe(-3);
    expect(d.batterySoe).toBe(56);
    expect(Object.is(d.batteryPower, 0)).toBe(true);
    expect(Object.is(roundWhole(-0.4), 0)).toBe(true);
    expect(roundWhole(-2.5)).toBe(-3);
    for (const v of Object.values(d))
      if (typeof v === 'number') expect(Number.isInteger(v)).toBe(true);
  });

  it('sets lastUpdated to the latest lastSeenDate among online devices', () => {
    const d = data([dev('relay', {}, 5), dev('inverter', {}, 100), dev('battery', {}, 400)]);
    expect(d.lastUpdated).toBe(seen(5));
  });

  it('is valid until the first counted device goes offline', () => {
    const r = flow([dev('relay', {}, 5), dev('inverter', {}, 100), dev('battery', {}, 400)]);
    expect(r.validUntilMs).toBe(NOW - 100_000 + WINDOW * 1000);
    // At that instant the device still counts; one ms later it does not.
    const devices = [dev('relay', {}, 5), dev('inverter', { powerAc: 9 }, 100)];
    expect(computeEnergyFlow(devices, r.validUntilMs, WINDOW).data?.inverterPower).toBe(9);
    expect(computeEnergyFlow(devices, r.validUntilMs + 1, WINDOW).data?.inverterPower).toBeNull();
  });
});

describe('serializeEnergyFlow', () => {
  it('writes the keys in spec order', () => {
    const d = data([dev('inverter', { powerAc: 1 })]);
    const shuffled = { ...d, lastUpdated: d.lastUpdated, inverterPower: d.inverterPower };
    expect(Object.keys(JSON.parse(serializeEnergyFlow(shuffled)))).toEqual([
      'inverterPower',
      'solarPower',
      'batteryPower',
      'batterySoe',
      'gridPower',
      'housePower',
      'evChargerPower',
      'boilerPower',
      'lastUpdated',
    ]);
  });

  it('writes null for no data and never -0', () => {
    expect(serializeEnergyFlow(null)).toBe('null');
    const d = data([dev('battery', { powerDc: -0.2 })]);
    expect(serializeEnergyFlow(d)).toContain('"batteryPower":0,');
  });
});
