import type { DeviceCategory } from '../../src/domain/device-fields.js';
import type { InstallationProfile } from './installations.js';
import { createRng, deriveSeed, type Rng } from './random.js';

// What is installed at a site: the hardware, its ratings, and which devices will fall silent.
// Device ids are stable: installationId * 100 + a slot per role.

export interface DeviceIdentity {
  readonly category: DeviceCategory;
  readonly deviceId: number;
  readonly gatewayId: number;
  readonly manufacturer: string;
  readonly model: string;
  readonly version: string;
  readonly serialNumber: string;
  /** Ms after the simulation start when the device stops reporting; null = never. */
  readonly silentAfterMs: number | null;
}

export interface InverterSpec extends DeviceIdentity {
  readonly peakW: number;
  /** Share of the peak on each MPPT string; sums to 1. */
  readonly stringShares: readonly number[];
}

export interface BatterySpec extends DeviceIdentity {
  readonly inverterId: number;
  readonly capacityWh: number;
  readonly maxChargeW: number;
  readonly maxDischargeW: number;
  readonly minSoe: number;
  readonly maxSoe: number;
  readonly soh: number;
  readonly nominalVoltage: number;
  readonly initialSoe: number;
}

export interface MeterSpec extends DeviceIdentity {
  readonly options: string;
}

export interface EvChargerSpec extends DeviceIdentity {
  readonly maxCurrentA: number;
  readonly phases: 1 | 3;
  readonly mode: string;
  readonly bidirectional: boolean;
  readonly requireAuthorization: boolean;
}

export interface BoilerSpec extends DeviceIdentity {
  readonly powerW: number;
  readonly targetC: number;
  readonly minimumC: number;
  readonly mode: string;
}

export interface RelaySpec extends DeviceIdentity {
  readonly relayCount: number;
}

export interface SitePlan {
  readonly installationId: number;
  readonly latitude: number;
  readonly longitude: number;
  readonly gridHz: 50 | 60;
  readonly baseLoadW: number;
  readonly inverters: readonly InverterSpec[];
  readonly battery: BatterySpec | null;
  readonly meter: MeterSpec;
  readonly evCharger: EvChargerSpec | null;
  readonly boiler: BoilerSpec | null;
  readonly relay: RelaySpec | null;
  /** Every device, in reporting order. */
  readonly devices: readonly DeviceIdentity[];
}

export interface PlanOptions {
  readonly seed: number;
  /** Fraction 0..1 of devices that stop reporting during the run. */
  readonly offlineFraction: number;
}

type Catalog = readonly (readonly [manufacturer: string, model: string])[];

// Some vendors pad their strings; the projection trims them at ingest.
const INVERTERS: Catalog = [
  ['Fronius', 'Symo GEN24 10.0 Plus'],
  ['SMA', 'Sunny Tripower X 15'],
  ['Huawei', 'SUN2000-10KTL-M1'],
  ['SolarEdge', 'SE10K-RWS '],
];
const BATTERIES: Catalog = [
  ['BYD ', 'Battery-Box Premium HVS 10.2'],
  ['LG Energy Solution', 'RESU10H Prime'],
  ['Huawei', 'LUNA2000-10-S0'],
  ['Pylontech', 'Force H2'],
];
const METERS: Catalog = [
  ['Fronius', 'Smart Meter TS 65A-3'],
  ['Janitza', 'UMG 604-PRO'],
  ['Carlo Gavazzi', 'EM24-DIN'],
  ['Eastron', 'SDM630-Modbus V2'],
];
const EV_CHARGERS: Catalog = [
  ['Wallbox', 'Pulsar Plus'],
  ['KEBA', 'KeContact P30 x-series'],
  ['Easee', 'Charge'],
  ['go-e', 'Charger Gemini 11'],
];
const BOILERS: Catalog = [
  ['my-PV', 'AC ELWA 2'],
  ['Stiebel Eltron', 'SHZ 150 LCD'],
];
const RELAYS: Catalog = [
  ['Shelly', 'Pro 4PM'],
  ['Shelly', 'Pro 2'],
];

const SLOT = { inverter: 1, battery: 11, energyMeter: 21, evCharger: 31, boiler: 41, relay: 51 };

export function createSitePlan(profile: InstallationProfile, options: PlanOptions): SitePlan {
  const { installation, place } = profile;
  const id = installation.id;
  const rng = createRng(deriveSeed(options.seed, id, 2));
  const commercial = installation.type === 'commercial';
  const identity = (category: DeviceCategory, slot: number, catalog: Catalog) =>
    makeIdentity(rng, options, id, category, slot, catalog);

  const inverterCount = rng.chance(0.92) ? (commercial && rng.chance(0.5) ? 2 : 1) : 0;
  const inverters: InverterSpec[] = Array.from({ length: inverterCount }, (_, i) => {
    const strings = rng.chance(0.6) ? 2 : 1;
    const first = strings === 2 ? rng.between(0.45, 0.65) : 1;
    return {
      ...identity('inverter', SLOT.inverter + i, INVERTERS),
      peakW: Math.round(commercial ? rng.between(15_000, 60_000) : rng.between(3_500, 12_000)),
      stringShares: strings === 2 ? [first, 1 - first] : [1],
    };
  });
  const firstInverter = inverters[0];
  let battery: BatterySpec | null = null;
  if (firstInverter && rng.chance(0.65)) {
    const capacityWh = Math.round(
      commercial ? rng.between(30_000, 100_000) : rng.between(5_000, 15_000),
    );
    const minSoe = rng.int(5, 10);
    const maxSoe = rng.int(95, 100);
    battery = {
      ...identity('battery', SLOT.battery, BATTERIES),
      inverterId: firstInverter.deviceId,
      capacityWh,
      maxChargeW: Math.round(capacityWh * rng.between(0.4, 0.6)),
      maxDischargeW: Math.round(capacityWh * rng.between(0.4, 0.6)),
      minSoe,
      maxSoe,
      soh: Math.round(rng.between(88, 100) * 10) / 10,
      nominalVoltage: rng.pick([51.2, 204.8, 409.6]),
      initialSoe: Math.round(rng.between(minSoe + 10, maxSoe - 10) * 10) / 10,
    };
  }
  const meter: MeterSpec = {
    ...identity('energyMeter', SLOT.energyMeter, METERS),
    options: rng.pick(['grid-connection', 'grid-connection;three-phase']),
  };
  const evCharger: EvChargerSpec | null = rng.chance(0.4)
    ? {
        ...identity('evCharger', SLOT.evCharger, EV_CHARGERS),
        maxCurrentA: rng.pick([16, 32]),
        phases: rng.chance(0.8) ? 3 : 1,
        mode: rng.pick(['SMART', 'FAST', 'PV_ONLY']),
        bidirectional: rng.chance(0.1),
        requireAuthorization: rng.chance(0.3),
      }
    : null;
  const boiler: BoilerSpec | null = rng.chance(0.25)
    ? {
        ...identity('boiler', SLOT.boiler, BOILERS),
        powerW: rng.pick([2_000, 3_000, 3_500]),
        targetC: rng.int(55, 65),
        minimumC: rng.int(40, 45),
        mode: rng.pick(['AUTO', 'PV_SURPLUS', 'ECO']),
      }
    : null;
  const relay: RelaySpec | null = rng.chance(0.2)
    ? { ...identity('relay', SLOT.relay, RELAYS), relayCount: rng.int(1, 4) }
    : null;

  const devices: DeviceIdentity[] = [...inverters];
  for (const d of [battery, meter, evCharger, boiler, relay]) if (d) devices.push(d);
  return {
    installationId: id,
    latitude: installation.latitude ?? place.latitude,
    longitude: installation.longitude ?? place.longitude,
    gridHz: place.gridHz,
    baseLoadW: Math.round(commercial ? rng.between(2_000, 8_000) : rng.between(200, 600)),
    inverters,
    battery,
    meter,
    evCharger,
    boiler,
    relay,
    devices,
  };
}

function makeIdentity(
  rng: Rng,
  options: PlanOptions,
  installationId: number,
  category: DeviceCategory,
  slot: number,
  catalog: Catalog,
): DeviceIdentity {
  const [manufacturer, model] = rng.pick(catalog);
  const serial = Array.from({ length: 10 }, () => rng.int(0, 35).toString(36)).join('');
  // Both draws always happen, so the fraction changes who falls silent and nothing else.
  // A device that falls silent reports for a while first, so it is seen before it goes offline.
  const silentRoll = rng.next();
  const silentAfterMs = Math.round(rng.between(10, 90) * 1000);
  return {
    category,
    deviceId: installationId * 100 + slot,
    gatewayId: 100_000 + installationId,
    manufacturer,
    model,
    version: `${rng.int(1, 4)}.${rng.int(0, 20)}.${rng.int(0, 9)}`,
    serialNumber: serial.toUpperCase(),
    silentAfterMs: silentRoll < options.offlineFraction ? silentAfterMs : null,
  };
}
