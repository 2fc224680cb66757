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

const num = (v: unknown): number | null => (typeof v === 'number' ? v : null);

/** Adds a value to a sum of the non-null values: null while none reports, never 0. */
const plus = (total: number | null, v: number | null): number | null =>
  v === null ? total : (total ?? 0) + v;

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
  for (const name of PV_STRINGS) solar = plus(solar, num(inverter[name]));
  return solar;
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
  const totals = new FlowTotals(nowMs, onlineWindowSeconds);
  for (const d of devices) totals.add(d.category, d.record);
  return totals.flow();
}

/**
 * computeEnergyFlow one device at a time, with no object per device: each sum is taken in the
 * order the devices are added, so the same devices in the same order give the same numbers.
 */
export class FlowTotals {
  private latest = Number.NEGATIVE_INFINITY;
  private earliest = Number.POSITIVE_INFINITY;
  private inverterAc: number | null = null;
  private solar: number | null = null;
  private meterAc: number | null = null;
  private evChargerAc: number | null = null;
  private boilerAc: number | null = null;
  private batteryDc: number | null = null;
  // Battery state of energy: weighted by ratedEnergy when every reporting battery has one > 0.
  private soeCount = 0;
  private soeSum = 0;
  private soeWeighted = 0;
  private weightSum = 0;
  private allWeighted = true;

  constructor(
    private readonly nowMs: number,
    private readonly onlineWindowSeconds: number,
  ) {}

  /**
   * A caller holding the precise time the record's lastSeenDate was written from passes it,
   * which spares parsing the date back (the served date is that time cut to whole seconds).
   */
  add(category: DeviceCategory, record: DeviceRecord, lastSeenPreciseMs?: number): void {
    const last =
      lastSeenPreciseMs === undefined
        ? lastSeenMsOf(record)
        : Math.floor(lastSeenPreciseMs / 1000) * 1000;
    if (last === null || !isOnlineAt(last, this.nowMs, this.onlineWindowSeconds)) return;
    this.latest = Math.max(this.latest, last);
    this.earliest = Math.min(this.earliest, last);
    if (category === 'inverter') {
      this.inverterAc = plus(this.inverterAc, num(record.powerAc));
      this.solar = plus(this.solar, solarOf(record));
    } else if (category === 'energyMeter') this.meterAc = plus(this.meterAc, num(record.powerAc));
    else if (category === 'evCharger')
      this.evChargerAc = plus(this.evChargerAc, num(record.powerAc));
    else if (category === 'boiler') this.boilerAc = plus(this.boilerAc, num(record.powerAc));
    else if (category === 'battery') this.addBattery(record);
  }

  private addBattery(record: DeviceRecord): void {
    this.batteryDc = plus(this.batteryDc, num(record.powerDc));
    const soe = num(record.soe);
    if (soe === null) return;
    const weight = num(record.ratedEnergy);
    this.soeCount++;
    this.soeSum += soe;
    if (weight !== null && weight > 0) {
      this.soeWeighted += soe * weight;
      this.weightSum += weight;
    } else this.allWeighted = false;
  }

  flow(): EnergyFlow {
    if (this.latest === Number.NEGATIVE_INFINITY) return { data: null, validUntilMs: 0 };
    const inverterPower = roundWhole(this.inverterAc);
    const gridPower = roundWhole(this.meterAc === null ? null : -this.meterAc);
    const evChargerPower = roundWhole(this.evChargerAc);
    const boilerPower = roundWhole(this.boilerAc);
    // From the rounded parts, so the served numbers add up for a client.
    const housePower =
      gridPower === null
        ? null
        : Math.max(
            0,
            (inverterPower ?? 0) + gridPower - (evChargerPower ?? 0) - (boilerPower ?? 0),
          );
    const soe =
      this.soeCount === 0
        ? null
        : this.allWeighted
          ? this.soeWeighted / this.weightSum
          : this.soeSum / this.soeCount;
    const data: EnergyFlowData = {
      inverterPower,
      solarPower: roundWhole(this.solar),
      batteryPower: roundWhole(this.batteryDc),
      batterySoe: roundWhole(soe),
      gridPower,
      housePower,
      evChargerPower,
      boilerPower,
      lastUpdated: formatDateTime(this.latest),
    };
    return { data, validUntilMs: this.earliest + this.onlineWindowSeconds * 1000 };
  }
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
