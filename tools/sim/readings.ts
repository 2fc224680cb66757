import type { IngestValue } from '../../src/domain/events.js';
import type { Rng } from './random.js';
import type { SiteSnapshot } from './site.js';
import type { DeviceIdentity, SitePlan } from './site-plan.js';

// What each device reports for one site snapshot: `fixed` fields (identity, ratings, the
// category's non-nullable fields) are sent when the device is first reported; `live` fields
// are measurements, sent whenever they change.

export type Fields = Record<string, IngestValue>;

export interface DeviceReading {
  readonly device: DeviceIdentity;
  readonly fixed: Fields;
  readonly live: Fields;
}

export function siteReadings(plan: SitePlan, snap: SiteSnapshot, rng: Rng): DeviceReading[] {
  const grid = gridSampler(plan, rng);
  const sunUp = snap.pvW.some((w) => w > 0);
  const readings: DeviceReading[] = [];

  plan.inverters.forEach((inv, i) => {
    const acW = snap.inverterAcW[i] ?? 0;
    const pvW = snap.pvW[i] ?? 0;
    const strings = snap.pvStringsW[i] ?? [];
    const battery = i === 0 ? plan.battery : null;
    const live: Fields = {
      status: sunUp ? 4 : 2, // SunSpec MPPT by day, SLEEPING at night
      vendorStatusString: sunUp ? 'Running' : 'Sleeping',
      powerAc: acW,
      ...grid.threePhase('powerAc', 'voltageAc', 'currentAc', acW),
      frequency: grid.frequency(),
      powerApparentAc: Math.round(Math.abs(acW) * 1.01),
      powerReactiveAc: Math.round(acW * 0.05),
      powerFactor: acW === 0 ? null : 0.99,
      powerDc: pvW,
      powerDcPvTotal: pvW,
      temperature: half(28 + (pvW / inv.peakW) * 22 + rng.normal() * 0.3),
    };
    strings.forEach((w, s) => {
      const volts = w > 0 ? Math.round(520 + rng.normal() * 8) : 0;
      live[`powerDcPv${s + 1}`] = w;
      live[`voltageDcPv${s + 1}`] = volts;
      live[`currentDcPv${s + 1}`] = volts > 0 ? round2(w / volts) : 0;
    });
    readings.push({
      device: inv,
      fixed: {
        ...identityFields(inv),
        isOffGrid: false,
        maxChargePower: battery ? battery.maxChargeW : null,
        maxDischargePower: battery ? battery.maxDischargeW : null,
      },
      live,
    });
  });

  const b = plan.battery;
  if (b) {
    const volts = round1(b.nominalVoltage * (0.95 + snap.soe / 1000) + rng.normal() * 0.1);
    const cellV = round2(3.2 + snap.soe / 500 + rng.normal() * 0.005);
    const tempC = half(22 + (Math.abs(snap.batteryW) / b.maxChargeW) * 6);
    readings.push({
      device: b,
      fixed: {
        ...identityFields(b),
        inverterId: b.inverterId,
        soh: b.soh,
        ratedEnergy: b.capacityWh,
        maximumEnergy: Math.round(b.capacityWh * (b.soh / 100)),
        maxChargeContinuousPower: b.maxChargeW,
        maxDischargeContinuousPower: b.maxDischargeW,
        minSoe: b.minSoe,
        maxSoe: b.maxSoe,
      },
      live: {
        status: snap.batteryW > 0 ? 1 : snap.batteryW < 0 ? 2 : 0,
        powerDc: snap.batteryW,
        voltageDc: volts,
        currentDc: round2(snap.batteryW / volts),
        soe: round1(snap.soe),
        availableEnergy: Math.round((b.capacityWh * (b.soh / 100) * snap.soe) / 100),
        temperature: tempC,
        minCellTemperature: tempC - 1,
        avgCellTemperature: tempC,
        maxCellTemperature: tempC + 1.5,
        minCellVoltage: round2(cellV - 0.01),
        avgCellVoltage: cellV,
        maxCellVoltage: round2(cellV + 0.01),
      },
    });
  }

  readings.push({
    device: plan.meter,
    fixed: { ...identityFields(plan.meter), options: plan.meter.options },
    live: {
      powerAc: snap.meterW,
      ...grid.threePhase('powerAc', 'voltageAc', 'currentAc', snap.meterW),
      frequency: grid.frequency(),
      totalImportAc: Math.round(snap.importWh),
      totalExportAc: Math.round(snap.exportWh),
      dailyImportAc: Math.round(snap.dailyImportWh),
      dailyExportAc: Math.round(snap.dailyExportWh),
    },
  });

  const ev = plan.evCharger;
  if (ev) {
    const charging = snap.evW > 0;
    const phaseFields =
      ev.phases === 3
        ? grid.threePhase('powerAc', 'voltageAc', 'currentAc', snap.evW)
        : grid.singlePhase('powerAc', 'voltageAc', 'currentAc', snap.evW);
    readings.push({
      device: ev,
      fixed: {
        ...identityFields(ev),
        mode: ev.mode,
        requireAuthorization: ev.requireAuthorization,
        supportsBiDirectionalCharging: ev.bidirectional,
        maxChargingCurrent: ev.maxCurrentA,
      },
      live: {
        status: charging ? 3 : 1,
        vendorStatusString: charging ? 'Charging' : 'Available',
        currentMaxChargingCurrent: charging ? ev.maxCurrentA : 0,
        powerOffered: charging ? ev.maxCurrentA * 230 * ev.phases : 0,
        powerAc: snap.evW,
        ...phaseFields,
        frequencyAc: grid.frequency(),
        temperature: half(charging ? 34 : 21),
      },
    });
  }

  const boiler = plan.boiler;
  if (boiler) {
    const heating = snap.boilerW > 0;
    readings.push({
      device: boiler,
      fixed: {
        ...identityFields(boiler),
        boilerMode: boiler.mode,
        targetTemperature: boiler.targetC,
        minimumTemperature: boiler.minimumC,
        effectiveMaxPower: boiler.powerW,
        operationMode: 'AUTO',
      },
      live: {
        status: heating ? 1 : 0,
        vendorStatusString: heating ? 'Heating' : 'Idle',
        powerAc: snap.boilerW,
        ...grid.singlePhase('powerAc', 'voltageAc', 'currentAc', snap.boilerW),
        frequency: grid.frequency(),
        temperature: half(snap.boilerTempC),
        operationState: heating ? 'HEATING' : 'IDLE',
        relayState: heating ? 'ON' : 'OFF',
        pwmPercent: heating ? 100 : 0,
      },
    });
  }

  const relay = plan.relay;
  if (relay) {
    readings.push({
      device: relay,
      fixed: { ...identityFields(relay), relayCount: relay.relayCount },
      live: { currentState: [...snap.relayStates], desiredState: [...snap.relayStates] },
    });
  }
  return readings;
}

function identityFields(d: DeviceIdentity): Fields {
  return {
    gatewayId: d.gatewayId,
    manufacturer: d.manufacturer,
    model: d.model,
    version: d.version,
    serialNumber: d.serialNumber,
  };
}

/** Grid measurements with a little noise; phase powers always add up to the total. */
function gridSampler(plan: SitePlan, rng: Rng) {
  const nominalV = plan.gridHz === 60 ? 120 : 230;
  const volts = () => round1(nominalV + rng.normal() * 1.5);
  return {
    frequency: () => round2(plan.gridHz + rng.normal() * 0.01),
    threePhase(power: string, voltage: string, current: string, totalW: number): Fields {
      const l1 = Math.round(totalW * (0.33 + rng.normal() * 0.01));
      const l2 = Math.round(totalW * (0.33 + rng.normal() * 0.01));
      const phases = [l1, l2, totalW - l1 - l2];
      const out: Fields = {};
      phases.forEach((w, i) => {
        const v = volts();
        out[`${power}L${i + 1}`] = w;
        out[`${voltage}L${i + 1}`] = v;
        out[`${current}L${i + 1}`] = round2(w / v);
      });
      return out;
    },
    singlePhase(power: string, voltage: string, current: string, totalW: number): Fields {
      const v = volts();
      return { [`${power}L1`]: totalW, [`${voltage}L1`]: v, [`${current}L1`]: round2(totalW / v) };
    },
  };
}

const round1 = (v: number) => Math.round(v * 10) / 10;
const round2 = (v: number) => Math.round(v * 100) / 100;
const half = (v: number) => Math.round(v * 2) / 2;
