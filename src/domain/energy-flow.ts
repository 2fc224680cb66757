import { formatDateTime, parseDateTime } from './date-time.js';
import type { DeviceCategory } from './device-fields.js';
import type { DeviceRecord } from './device-record.js';

// The energy flow of one installation (spec/semantics.md), over its online devices only.

export interface EnergyFlowData {
  readonly inverterPower: number | null;
  readonly solarPower: number | null;
  readonly batteryPower: number | null;
  readonly batterySoe: number | null;
  readonly gridPower: number | null;
  readonly housePower: number | null;
  readonly evChargerPower: number | null;
  readonly boilerPower: number | null;
  readonly lastUpdated: string;
}

export interface EnergyFlow {
  readonly data: EnergyFlowData | null;
  /** Last moment the data stays right by time alone (ms); 0 = no online device, never expires. */
  readonly validUntilMs: number;
}

export interface FlowDevice {
  readonly category: DeviceCategory;
  readonly record: DeviceRecord;
}

/**
 * The few values of one device that its installation's flow depends on: what the consumers keep
 * per device beside the record, so a flow is computed without parsing whole records.
 */
export interface FlowInput {
  readonly category: DeviceCategory;
  /** The served (whole-second) lastSeenDate as epoch ms; null when unset. */
  readonly lastSeenMs: number | null;
  /** inverter, energyMeter, evCharger, boiler. */
  readonly powerAc: number | null;
  /** inverter: powerDcPvTotal, else the sum of powerDcPv1-6. */
  readonly solar: number | null;
  /** battery. */
  readonly powerDc: number | null;
  readonly soe: number | null;
  readonly ratedEnergy: number | null;
}

const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);

/** Sum of the non-null values; null when none reports, never 0. */
function sum(values: ReadonlyArray<number | null>): number | null {
  let total: number | null = null;
  for (const v of values) if (v !== null) total = (total ?? 0) + v;
  return total;
}

/** Half away from zero, so that negating before or after rounding agrees; never -0. */
export function roundWhole(value: number | null): number | null {
  if (value === null) return null;
  return Math.sign(value) * Math.round(Math.abs(value)) + 0;
}

const PV_STRINGS = [1, 2, 3, 4, 5, 6].map((i) => `powerDcPv${i}`);

function solarOf(inverter: DeviceRecord): number | null {
  const total = num(inverter.powerDcPvTotal);
  if (total !== null) return total;
  let solar: number | null = null;
  for (const name of PV_STRINGS) {
    const v = num(inverter[name]);
    if (v !== null) solar = (solar ?? 0) + v;
  }
  return solar;
}

const POWER_AC: ReadonlySet<DeviceCategory> = new Set([
  'inverter',
  'energyMeter',
  'evCharger',
  'boiler',
]);

/**
 * The flow inputs of one record; only the values its category contributes are set. A caller
 * holding the precise time the record's lastSeenDate was written from passes it, which spares
 * parsing the date back (the served date is that time cut to whole seconds).
 */
export function flowInputOf(
  category: DeviceCategory,
  record: DeviceRecord,
  lastSeenPreciseMs?: number,
): FlowInput {
  const battery = category === 'battery';
  return {
    category,
    lastSeenMs:
      lastSeenPreciseMs === undefined
        ? lastSeenMsOf(record)
        : Math.floor(lastSeenPreciseMs / 1000) * 1000,
    powerAc: POWER_AC.has(category) ? num(record.powerAc) : null,
    solar: category === 'inverter' ? solarOf(record) : null,
    powerDc: battery ? num(record.powerDc) : null,
    soe: battery ? num(record.soe) : null,
    ratedEnergy: battery ? num(record.ratedEnergy) : null,
  };
}

function batterySoe(batteries: readonly FlowInput[]): number | null {
  const reporting = batteries.filter((b) => b.soe !== null);
  if (reporting.length === 0) return null;
  const soes = reporting.map((b) => b.soe as number);
  const weights = reporting.map((b) => b.ratedEnergy);
  if (weights.every((w) => w !== null && w > 0)) {
    const total = (weights as number[]).reduce((a, w) => a + w, 0);
    return soes.reduce((a, s, i) => a + s * (weights[i] as number), 0) / total;
  }
  return soes.reduce((a, s) => a + s, 0) / soes.length;
}

/**
 * Online at `nowMs`: lastSeenDate set and no older than the window. Uses the served
 * (whole-second) lastSeenDate, so a client checking the same rule agrees.
 */
export function isOnline(
  record: DeviceRecord,
  nowMs: number,
  onlineWindowSeconds: number,
): boolean {
  return isOnlineAt(lastSeenMsOf(record), nowMs, onlineWindowSeconds);
}

function isOnlineAt(lastSeenMs: number | null, nowMs: number, onlineWindowSeconds: number) {
  return lastSeenMs !== null && nowMs - lastSeenMs <= onlineWindowSeconds * 1000;
}

function lastSeenMsOf(record: DeviceRecord): number | null {
  return typeof record.lastSeenDate === 'string' ? parseDateTime(record.lastSeenDate) : null;
}

export function computeEnergyFlow(
  devices: readonly FlowDevice[],
  nowMs: number,
  onlineWindowSeconds: number,
): EnergyFlow {
  return computeFlowFromInputs(
    devices.map((d) => flowInputOf(d.category, d.record)),
    nowMs,
    onlineWindowSeconds,
  );
}

/** computeEnergyFlow over the devices' flow inputs (in the same order: sums are in that order). */
export function computeFlowFromInputs(
  devices: Iterable<FlowInput>,
  nowMs: number,
  onlineWindowSeconds: number,
): EnergyFlow {
  const byCategory = new Map<DeviceCategory, FlowInput[]>();
  let latest = Number.NEGATIVE_INFINITY;
  let earliest = Number.POSITIVE_INFINITY;
  for (const device of devices) {
    const last = device.lastSeenMs;
    if (last === null || !isOnlineAt(last, nowMs, onlineWindowSeconds)) continue;
    latest = Math.max(latest, last);
    earliest = Math.min(earliest, last);
    const list = byCategory.get(device.category) ?? [];
    list.push(device);
    byCategory.set(device.category, list);
  }
  if (latest === Number.NEGATIVE_INFINITY) return { data: null, validUntilMs: 0 };

  const of = (c: DeviceCategory) => byCategory.get(c) ?? [];
  const powerAc = (c: DeviceCategory) => sum(of(c).map((d) => d.powerAc));
  const inverterPower = roundWhole(powerAc('inverter'));
  const meterPower = powerAc('energyMeter');
  const gridPower = roundWhole(meterPower === null ? null : -meterPower);
  const evChargerPower = roundWhole(powerAc('evCharger'));
  const boilerPower = roundWhole(powerAc('boiler'));
  // From the rounded parts, so the served numbers add up for a client.
  const housePower =
    gridPower === null
      ? null
      : Math.max(0, (inverterPower ?? 0) + gridPower - (evChargerPower ?? 0) - (boilerPower ?? 0));
  const data: EnergyFlowData = {
    inverterPower,
    solarPower: roundWhole(sum(of('inverter').map((d) => d.solar))),
    batteryPower: roundWhole(sum(of('battery').map((d) => d.powerDc))),
    batterySoe: roundWhole(batterySoe(of('battery'))),
    gridPower,
    housePower,
    evChargerPower,
    boilerPower,
    lastUpdated: formatDateTime(latest),
  };
  return { data, validUntilMs: earliest + onlineWindowSeconds * 1000 };
}

/** `data` as ready-to-send JSON, in spec key order; `null` when nothing is online. */
export function serializeEnergyFlow(data: EnergyFlowData | null): string {
  if (data === null) return 'null';
  const ordered: EnergyFlowData = {
    inverterPower: data.inverterPower,
    solarPower: data.solarPower,
    batteryPower: data.batteryPower,
    batterySoe: data.batterySoe,
    gridPower: data.gridPower,
    housePower: data.housePower,
    evChargerPower: data.evChargerPower,
    boilerPower: data.boilerPower,
    lastUpdated: data.lastUpdated,
  };
  return JSON.stringify(ordered);
}
