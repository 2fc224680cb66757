import type { Rng } from './random.js';
import type { SitePlan } from './site-plan.js';
import { clearSkyFraction, solarHour } from './solar.js';

// The physics of one site, stepped in time. All powers are whole watts, chosen so the energy
// balance holds exactly at every step:
//   inverter AC (sum) = PV - battery            (hybrid inverter; battery positive = charging)
//   meter AC          = inverter AC - house - EV - boiler   (positive = export)

export interface SiteState {
  lastStepMs: number | null;
  cloud: number;
  soe: number;
  evSessionRemainingS: number;
  boilerTempC: number;
  boilerHeating: boolean;
  relayStates: boolean[];
  importWh: number;
  exportWh: number;
  dailyImportWh: number;
  dailyExportWh: number;
  /** Solar day number of the daily counters. */
  day: number;
}

export interface SiteSnapshot {
  readonly atMs: number;
  /** PV power per inverter, per MPPT string. */
  readonly pvStringsW: readonly (readonly number[])[];
  readonly pvW: readonly number[];
  readonly inverterAcW: readonly number[];
  readonly houseW: number;
  readonly evW: number;
  readonly boilerW: number;
  readonly batteryW: number;
  readonly soe: number;
  readonly meterW: number;
  readonly boilerTempC: number;
  readonly relayStates: readonly boolean[];
  readonly importWh: number;
  readonly exportWh: number;
  readonly dailyImportWh: number;
  readonly dailyExportWh: number;
}

const MAX_STEP_S = 300; // a long pause is not integrated as if power had flowed all along
const EV_SESSION_START_PER_S = 1 / 2_400; // about one session every 40 minutes when idle
const BOILER_HEAT_C_PER_WH = 1 / 230; // ~200 l tank
const BOILER_LOSS_C_PER_S = 1 / 900; // usage and standing losses

export function initialSiteState(plan: SitePlan, rng: Rng): SiteState {
  return {
    lastStepMs: null,
    cloud: rng.between(0.5, 1),
    soe: plan.battery?.initialSoe ?? 0,
    evSessionRemainingS: 0,
    boilerTempC: plan.boiler ? rng.between(plan.boiler.minimumC, plan.boiler.targetC) : 0,
    boilerHeating: false,
    relayStates: Array.from({ length: plan.relay?.relayCount ?? 0 }, () => rng.chance(0.5)),
    importWh: Math.round(rng.between(1_000_000, 20_000_000)),
    exportWh: Math.round(rng.between(500_000, 15_000_000)),
    dailyImportWh: 0,
    dailyExportWh: 0,
    day: solarDay(plan.longitude, 0),
  };
}

/** Advances the site to `nowMs` (mutating `state`) and returns what every device now reads. */
export function stepSite(plan: SitePlan, state: SiteState, nowMs: number, rng: Rng): SiteSnapshot {
  const dtS =
    state.lastStepMs === null
      ? 0
      : Math.min(MAX_STEP_S, Math.max(0, (nowMs - state.lastStepMs) / 1000));
  state.lastStepMs = nowMs;
  state.cloud = clamp(state.cloud + rng.normal() * 0.01 * Math.sqrt(dtS), 0.15, 1);

  const sun = clearSkyFraction(plan.latitude, plan.longitude, nowMs) * state.cloud;
  const pvStringsW = plan.inverters.map((inv) =>
    inv.stringShares.map((share) => Math.round(inv.peakW * share * sun)),
  );
  const pvW = pvStringsW.map((strings) => strings.reduce((a, b) => a + b, 0));
  const pvTotal = pvW.reduce((a, b) => a + b, 0);

  const houseW = Math.max(
    50,
    Math.round(plan.baseLoadW * loadProfile(plan.longitude, nowMs) * (1 + rng.normal() * 0.05)),
  );
  const evW = stepEvCharger(plan, state, dtS, rng);
  const boilerW = stepBoiler(plan, state, dtS);
  if (plan.relay && rng.chance(Math.min(1, dtS / 600))) {
    const i = rng.int(0, plan.relay.relayCount - 1);
    state.relayStates[i] = !state.relayStates[i];
  }

  const batteryW = stepBattery(plan, state, pvTotal - houseW - evW - boilerW, dtS);
  // The battery hangs off the first inverter; the others only convert PV.
  const inverterAcW = pvW.map((pv, i) => (i === 0 ? pv - batteryW : pv));
  const inverterTotal = inverterAcW.reduce((a, b) => a + b, 0);
  const meterW = inverterTotal - houseW - evW - boilerW;

  const day = solarDay(plan.longitude, nowMs);
  if (day !== state.day) {
    state.day = day;
    state.dailyImportWh = 0;
    state.dailyExportWh = 0;
  }
  const exportedWh = (Math.max(0, meterW) * dtS) / 3600;
  const importedWh = (Math.max(0, -meterW) * dtS) / 3600;
  state.exportWh += exportedWh;
  state.importWh += importedWh;
  state.dailyExportWh += exportedWh;
  state.dailyImportWh += importedWh;

  return {
    atMs: nowMs,
    pvStringsW,
    pvW,
    inverterAcW,
    houseW,
    evW,
    boilerW,
    batteryW,
    soe: state.soe,
    meterW,
    boilerTempC: state.boilerTempC,
    relayStates: [...state.relayStates],
    importWh: state.importWh,
    exportWh: state.exportWh,
    dailyImportWh: state.dailyImportWh,
    dailyExportWh: state.dailyExportWh,
  };
}

/**
 * Charges from surplus, discharges to cover a deficit, within the power limits and so that the
 * state of energy stays between minSoe and maxSoe (hence always within 0..100).
 */
function stepBattery(plan: SitePlan, state: SiteState, surplusW: number, dtS: number): number {
  const b = plan.battery;
  if (!b) return 0;
  let powerW =
    surplusW > 0 ? Math.min(surplusW, b.maxChargeW) : -Math.min(-surplusW, b.maxDischargeW);
  if (dtS > 0) {
    const whPerPercent = b.capacityWh / 100;
    const roomW = Math.max(0, ((b.maxSoe - state.soe) * whPerPercent * 3600) / dtS);
    const reserveW = Math.max(0, ((state.soe - b.minSoe) * whPerPercent * 3600) / dtS);
    powerW = clamp(powerW, -reserveW, roomW);
  } else {
    if (state.soe >= b.maxSoe) powerW = Math.min(powerW, 0);
    if (state.soe <= b.minSoe) powerW = Math.max(powerW, 0);
  }
  // Truncate toward zero so rounding never pushes past a bound.
  powerW = Math.trunc(powerW);
  const soe = state.soe + (powerW * dtS) / 3600 / (b.capacityWh / 100);
  state.soe = clamp(
    soe,
    Math.max(0, Math.min(b.minSoe, state.soe)),
    Math.min(100, Math.max(b.maxSoe, state.soe)),
  );
  return powerW;
}

function stepEvCharger(plan: SitePlan, state: SiteState, dtS: number, rng: Rng): number {
  const ev = plan.evCharger;
  if (!ev) return 0;
  if (state.evSessionRemainingS > 0) {
    state.evSessionRemainingS = Math.max(0, state.evSessionRemainingS - dtS);
  } else if (rng.chance(Math.min(1, dtS * EV_SESSION_START_PER_S))) {
    state.evSessionRemainingS = rng.between(15, 90) * 60;
  }
  if (state.evSessionRemainingS <= 0) return 0;
  const fullW = ev.maxCurrentA * 230 * ev.phases;
  return Math.round(fullW * (0.9 + rng.next() * 0.08));
}

/** A thermostat: heats at full power below min-ish, stops at target; the tank cools meanwhile. */
function stepBoiler(plan: SitePlan, state: SiteState, dtS: number): number {
  const boiler = plan.boiler;
  if (!boiler) return 0;
  const heatedC = state.boilerHeating ? (boiler.powerW * dtS * BOILER_HEAT_C_PER_WH) / 3600 : 0;
  state.boilerTempC = clamp(state.boilerTempC + heatedC - dtS * BOILER_LOSS_C_PER_S, 10, 95);
  if (state.boilerTempC >= boiler.targetC) state.boilerHeating = false;
  if (state.boilerTempC <= boiler.minimumC + 5) state.boilerHeating = true;
  return state.boilerHeating ? boiler.powerW : 0;
}

/** Household demand: low at night, morning and evening peaks (multiplier of the base load). */
function loadProfile(longitude: number, nowMs: number): number {
  const h = solarHour(longitude, nowMs);
  const bump = (centre: number, width: number, height: number) =>
    height * Math.exp(-(((h - centre) / width) ** 2));
  return 0.8 + bump(7.5, 1.2, 1.2) + bump(12.5, 1.5, 0.5) + bump(19, 2, 1.8);
}

function solarDay(longitude: number, nowMs: number): number {
  return Math.floor((nowMs + (longitude / 15) * 3_600_000) / 86_400_000);
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}
