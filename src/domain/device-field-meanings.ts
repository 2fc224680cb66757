import type { DeviceCategory } from './device-fields.js';

// What each device field means: unit, sign convention, range and what null means, from
// read-api.md (and semantics.md where the energy flow gives a sign its meaning). The one source
// of every device field's description in docs/openapi.json, docs/asyncapi.json and
// docs/schemas; device-fields.ts attaches them to its table. Where read-api.md says "not shown",
// the text says what the response-wide conventions fix (power W, energy Wh) and that the value
// is passed through as the device reports it, never more than the product knows.

const NULL = 'null: unknown, unavailable or unsupported (not zero)';
const TRIMMED =
  'null bytes and leading/trailing white space are removed at ingest; blank becomes null';

const phase = (n: 1 | 2 | 3) => `L${n}`;
const perPhase = (prefix: string, text: (n: string) => string): Record<string, string> =>
  Object.fromEntries(([1, 2, 3] as const).map((n) => [`${prefix}${phase(n)}`, text(phase(n))]));
const perString = (prefix: string, text: (n: number) => string): Record<string, string> =>
  Object.fromEntries([1, 2, 3, 4, 5, 6].map((n) => [`${prefix}${n}`, text(n)]));

const COMMON: Record<string, string> = {
  id: "The device's id: unique within its category, a device's identity is (category, id). Positive integer within JavaScript's safe range.",
  installationId:
    'The installation the device belongs to: the one named in its latest applied event.',
  gatewayId: "The linked gateway's id, a positive integer; null when none is assigned.",
  manufacturer: `Manufacturer name as reported; ${TRIMMED}. ${NULL}.`,
  model: `Model name as reported; ${TRIMMED}. ${NULL}.`,
  version: `Reported firmware/software version; ${TRIMMED}. ${NULL}.`,
  serialNumber: `Serial number as reported; ${TRIMMED}. ${NULL}.`,
  firstSeenDate:
    'The earliest observedAt ever seen for the device, UTC, whole seconds. Set by the service, never by a producer.',
  lastSeenDate:
    'The latest observedAt applied, UTC, whole seconds. The device is online while now - lastSeenDate <= the online window (default 300 s); offline devices stay in the lists: check it before treating the telemetry as current. Set by the service, never by a producer.',
};

const acPhases = (what: string): Record<string, string> => ({
  ...perPhase(
    'powerAc',
    (p) => `Active AC power on phase ${p}, W; same sign rule as powerAc. ${NULL}.`,
  ),
  ...perPhase('voltageAc', (p) => `AC voltage of phase ${p}, V. ${NULL}.`),
  ...perPhase(
    'currentAc',
    (p) =>
      `AC current of phase ${p}, A; its sign is the ${what}'s own convention: use powerAc${p} for the direction. ${NULL}.`,
  ),
});

const INVERTER: Record<string, string> = {
  status:
    'Normalized SunSpec operating state (model 101-103 St): rawValue 1 OFF, 2 SLEEPING, 3 STARTING, 4 MPPT, 5 THROTTLED, 6 SHUTTING_DOWN, 7 FAULT, 8 STANDBY. null when missing or unknown.',
  vendorStatusString: `Free-text vendor status, passed through; not a fixed value set. ${NULL}.`,
  isOffGrid: `True when the inverter reports operating off-grid. ${NULL}.`,
  maxChargePower: `Maximum battery charge power, W, a magnitude without sign. ${NULL}.`,
  maxDischargePower: `Maximum battery discharge power, W, a magnitude without sign. ${NULL}.`,
  powerAc: `Total active AC power, W. Positive: power the inverter supplies to the AC side (PV production and/or battery discharge); negative: power it draws from the AC side (e.g. battery charging, standby use). Not by itself the import/export at the grid connection (that is the energy meter's). The energy flow's inverterPower is the sum of these. ${NULL}.`,
  ...acPhases('inverter'),
  frequency: `AC frequency, Hz. ${NULL}.`,
  powerApparentAc: `Apparent AC power, VA; its sign does not indicate direction. ${NULL}.`,
  powerReactiveAc: `Reactive AC power, var; the device's own sign convention, passed through: no uniform sign. ${NULL}.`,
  powerFactor: `Power factor, dimensionless; its sign is device-dependent. ${NULL}.`,
  backupPowerAc: `Power on the backup/EPS output, W. Positive: supply to the backup loads; negative: reverse flow, where reported. Not the grid-connection measurement. ${NULL}.`,
  powerDc: `Device-reported DC power, W. For devices that report net DC conversion, positive is DC toward the inverter for AC conversion and negative is reverse conversion; other integrations use it for PV production. Not a universal battery charge/discharge measure (use the battery's powerDc). ${NULL}.`,
  powerDcPvTotal: `Total PV DC production, W: the preferred field for solar production. Positive: production; zero: no measured production; negative has no defined meaning. The energy flow's solarPower uses it, or the sum of powerDcPv1-6 where it is null. ${NULL}.`,
  ...perString('powerDcPv', (n) => `DC power of PV input ${n}, W; positive: production. ${NULL}.`),
  ...perString('voltageDcPv', (n) => `DC voltage of PV input ${n}, V. ${NULL}.`),
  ...perString('currentDcPv', (n) => `DC current of PV input ${n}, A. ${NULL}.`),
  temperature: `Inverter temperature, °C. ${NULL}.`,
};

const PERCENT = 'percent 0-100 (not a 0-1 fraction)';

const BATTERY: Record<string, string> = {
  inverterId: "The linked inverter's id, a positive integer; null when none is assigned.",
  status: `Device-reported numeric status, not normalized: no common status enumeration across manufacturers. ${NULL}.`,
  powerDc: `Battery DC power, W. Positive: charging; negative: discharging; zero: no measured net flow. Running on battery alone, its sign is opposite to the inverter's AC output power. The energy flow's batteryPower is the sum of these. ${NULL}.`,
  voltageDc: `Battery DC voltage, V. ${NULL}.`,
  currentDc: `Battery DC current, A. Where signed current is supported, positive is charging and negative discharging; powerDc is the primary direction measure. ${NULL}.`,
  soe: `State of energy, ${PERCENT}. The energy flow's batterySoe is their mean weighted by ratedEnergy. ${NULL}.`,
  soh: `State of health, ${PERCENT}. ${NULL}.`,
  temperature: `Battery temperature, °C. ${NULL}.`,
  minCellTemperature: `Lowest cell temperature, °C. ${NULL}.`,
  avgCellTemperature: `Average cell temperature, °C. ${NULL}.`,
  maxCellTemperature: `Highest cell temperature, °C. ${NULL}.`,
  minCellVoltage: `Lowest cell voltage, V. ${NULL}.`,
  avgCellVoltage: `Average cell voltage, V. ${NULL}.`,
  maxCellVoltage: `Highest cell voltage, V. ${NULL}.`,
  ratedEnergy: `Nominal capacity, Wh: the configured capacity correction if present, otherwise the device-reported nominal energy. Weights the energy flow's batterySoe. ${NULL}.`,
  maximumEnergy: `Device-reported maximum capacity, Wh. ${NULL}.`,
  availableEnergy: `Device-reported stored energy available, Wh. ${NULL}.`,
  maxChargeContinuousPower: `Maximum continuous charge power, W, a magnitude without sign. ${NULL}.`,
  maxDischargeContinuousPower: `Maximum continuous discharge power, W, a magnitude without sign. ${NULL}.`,
  minSoe: `Lower bound of the energy level, ${PERCENT}. ${NULL}.`,
  maxSoe: `Upper bound of the energy level, ${PERCENT}. ${NULL}.`,
};

const ENERGY_METER: Record<string, string> = {
  powerAc: `Active AC power at the meter, W. Positive: export (feed-in to the grid); negative: import (draw from the grid). The energy flow's gridPower is minus the sum of these (positive import). ${NULL}.`,
  ...acPhases('meter'),
  frequency: `AC frequency, Hz. ${NULL}.`,
  totalImportAc: `Energy imported from the grid, cumulative meter reading, Wh. ${NULL}.`,
  totalExportAc: `Energy exported to the grid, cumulative meter reading, Wh. ${NULL}.`,
  dailyImportAc: `Energy imported from the grid today (the device's day), Wh. ${NULL}.`,
  dailyExportAc: `Energy exported to the grid today (the device's day), Wh. ${NULL}.`,
  options: 'Meter options as the device reports them, passed through; not a fixed value set.',
};

const EV_CHARGER: Record<string, string> = {
  mode: 'Charging mode as the charger reports it, passed through (not a fixed value set). A read-only observation: this API controls nothing.',
  requireAuthorization: `True when the charger requires authorization before charging. ${NULL}.`,
  supportsBiDirectionalCharging:
    'True when the charger can also discharge a connected vehicle (bidirectional).',
  maxChargingCurrent: `Maximum charging current the charger supports, A. ${NULL}.`,
  currentMaxChargingCurrent: `Charging-current limit currently in force, A. ${NULL}.`,
  status: `Device-reported numeric status, not normalized. ${NULL}.`,
  vendorStatusString: `Free-text vendor status, passed through; not a fixed value set. ${NULL}.`,
  powerOffered: `Power the charger currently offers the vehicle, W. ${NULL}.`,
  powerAc: `Active AC power of the charger, W; positive: power drawn to charge (consumption). The energy flow's evChargerPower is the sum of these and housePower excludes it. ${NULL}.`,
  ...acPhases('charger'),
  frequencyAc: `AC frequency, Hz. ${NULL}.`,
  powerDc: `DC power, W, as the device reports it. ${NULL}.`,
  voltageDc: `DC voltage, V. ${NULL}.`,
  currentDc: `DC current, A. ${NULL}.`,
  temperature: `Charger temperature, °C. ${NULL}.`,
};

const RELAY: Record<string, string> = {
  relayCount: 'Number of relay channels the device reports (0 or more).',
  currentState:
    'Observed state of each relay channel, true on and false off, in the order the device reports them.',
  desiredState:
    'The state each relay channel was last asked for (true on, false off, null: none requested), in the same order. A read-only observation: this API controls nothing.',
};

const BOILER_ANY =
  'Device-reported, passed through: a string, number, boolean or null as the device sends it (read-api.md fixes no type).';

const BOILER: Record<string, string> = {
  status: `Device-reported numeric status, not normalized. ${NULL}.`,
  vendorStatusString: `Free-text vendor status, passed through; not a fixed value set. ${NULL}.`,
  boilerMode:
    'Operating mode as the boiler reports it, passed through (not a fixed value set). A read-only observation.',
  powerAc: `Active AC power of the boiler, W; positive: power drawn for heating (consumption). The energy flow's boilerPower is the sum of these and housePower excludes it. ${NULL}.`,
  ...acPhases('boiler'),
  frequency: `AC frequency, Hz. ${NULL}.`,
  temperature: `Temperature at the boiler's first sensor, °C. ${NULL}.`,
  temperature2: `Temperature at the second sensor, °C. ${NULL}.`,
  temperature3: `Temperature at the third sensor, °C. ${NULL}.`,
  temperature4: `Temperature at the fourth sensor, °C. ${NULL}.`,
  targetTemperature: `Target (set-point) temperature, °C. ${NULL}.`,
  minimumTemperature: `Minimum temperature the boiler keeps, °C. ${NULL}.`,
  availablePower: `Power the boiler could take now, W. ${NULL}.`,
  effectiveMaxPower: `Maximum power the boiler can draw, in effect now, W. ${NULL}.`,
  operationMode: BOILER_ANY,
  operationState: BOILER_ANY,
  deviceState: BOILER_ANY,
  relayState: BOILER_ANY,
  loadState: BOILER_ANY,
  pwmPercent: `PWM duty cycle of the heating element, percent as reported (not range-checked). ${NULL}.`,
};

const BY_CATEGORY: Readonly<Record<DeviceCategory, Readonly<Record<string, string>>>> = {
  inverter: INVERTER,
  battery: BATTERY,
  energyMeter: ENERGY_METER,
  evCharger: EV_CHARGER,
  relay: RELAY,
  boiler: BOILER,
};

/** The description of one field of a category; throws for a field without one (a build bug). */
export function deviceFieldMeaning(category: DeviceCategory, name: string): string {
  const meaning = BY_CATEGORY[category][name] ?? COMMON[name];
  if (meaning === undefined) throw new Error(`no description for ${category}.${name}`);
  return meaning;
}
