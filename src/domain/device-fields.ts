import { z } from 'zod';

// The device record layout of read-api.md, in the spec's key order. One table drives ingest
// validation, creation defaults, serialization and the producer JSON Schemas.

export const DEVICE_CATEGORIES = [
  'inverter',
  'battery',
  'energyMeter',
  'evCharger',
  'relay',
  'boiler',
] as const;
export type DeviceCategory = (typeof DEVICE_CATEGORIES)[number];

/** The API response array that carries each category. */
export const CATEGORY_ARRAY_NAME = {
  inverter: 'inverters',
  battery: 'batteries',
  energyMeter: 'energyMeters',
  evCharger: 'evChargers',
  relay: 'relays',
  boiler: 'boilers',
} as const satisfies Record<DeviceCategory, string>;

/** Builds one value per category. */
export function perCategory<T>(build: (category: DeviceCategory) => T): Record<DeviceCategory, T> {
  return Object.fromEntries(DEVICE_CATEGORIES.map((c) => [c, build(c)])) as unknown as Record<
    DeviceCategory,
    T
  >;
}

export function isDeviceCategory(value: unknown): value is DeviceCategory {
  return typeof value === 'string' && (DEVICE_CATEGORIES as readonly string[]).includes(value);
}

/**
 * Ingest value types. `sunspec` is the inverter status: an integer on the topic, an object in the
 * record. `any` is for boiler fields whose type read-api.md leaves open.
 */
export type FieldKind =
  | 'integer'
  | 'number'
  | 'string'
  | 'boolean'
  | 'booleanArray'
  | 'nullableBooleanArray'
  | 'sunspec'
  | 'dateTime'
  | 'any';

export interface FieldSpec {
  readonly name: string;
  readonly kind: FieldKind;
  readonly nullable: boolean;
  /** Percent 0-100 (battery soe, soh, minSoe, maxSoe). */
  readonly percent: boolean;
  /** Owned by the projection; never accepted from a producer. */
  readonly owned: boolean;
}

type Opts = { nullable?: boolean; percent?: boolean; owned?: boolean };
const f = (name: string, kind: FieldKind, o: Opts = {}): FieldSpec => ({
  name,
  kind,
  nullable: o.nullable ?? true,
  percent: o.percent ?? false,
  owned: o.owned ?? false,
});
const nums = (...names: string[]) => names.map((n) => f(n, 'number'));
const series = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}${i + 1}`);
const phases = (prefix: string) => [1, 2, 3].map((i) => `${prefix}L${i}`);

const COMMON: readonly FieldSpec[] = [
  f('id', 'integer', { nullable: false, owned: true }),
  f('installationId', 'integer', { owned: true }),
  f('gatewayId', 'integer'),
  f('manufacturer', 'string'),
  f('model', 'string'),
  f('version', 'string'),
  f('serialNumber', 'string'),
  f('firstSeenDate', 'dateTime', { owned: true }),
  f('lastSeenDate', 'dateTime', { owned: true }),
];

const AC_PHASES = [...phases('powerAc'), ...phases('voltageAc'), ...phases('currentAc')];

const INVERTER: readonly FieldSpec[] = [
  f('status', 'sunspec'),
  f('vendorStatusString', 'string'),
  f('isOffGrid', 'boolean'),
  f('maxChargePower', 'integer'),
  f('maxDischargePower', 'integer'),
  ...nums('powerAc', ...AC_PHASES),
  ...nums('frequency', 'powerApparentAc', 'powerReactiveAc', 'powerFactor', 'backupPowerAc'),
  ...nums('powerDc', 'powerDcPvTotal'),
  ...nums(...series('powerDcPv', 6), ...series('voltageDcPv', 6), ...series('currentDcPv', 6)),
  ...nums('temperature'),
];

const BATTERY: readonly FieldSpec[] = [
  f('inverterId', 'integer'),
  f('status', 'integer'),
  ...nums('powerDc', 'voltageDc', 'currentDc'),
  f('soe', 'number', { percent: true }),
  f('soh', 'number', { percent: true }),
  ...nums('temperature', 'minCellTemperature', 'avgCellTemperature', 'maxCellTemperature'),
  ...nums('minCellVoltage', 'avgCellVoltage', 'maxCellVoltage'),
  ...nums('ratedEnergy', 'maximumEnergy', 'availableEnergy'),
  ...nums('maxChargeContinuousPower', 'maxDischargeContinuousPower'),
  f('minSoe', 'integer', { percent: true }),
  f('maxSoe', 'integer', { percent: true }),
];

const ENERGY_METER: readonly FieldSpec[] = [
  ...nums('powerAc', ...AC_PHASES, 'frequency'),
  ...nums('totalImportAc', 'totalExportAc', 'dailyImportAc', 'dailyExportAc'),
  f('options', 'string', { nullable: false }),
];

const EV_CHARGER: readonly FieldSpec[] = [
  f('mode', 'string', { nullable: false }),
  f('requireAuthorization', 'boolean'),
  f('supportsBiDirectionalCharging', 'boolean', { nullable: false }),
  ...nums('maxChargingCurrent', 'currentMaxChargingCurrent', 'status'),
  f('vendorStatusString', 'string'),
  ...nums('powerOffered', 'powerAc', ...AC_PHASES, 'frequencyAc'),
  ...nums('powerDc', 'voltageDc', 'currentDc', 'temperature'),
];

const RELAY: readonly FieldSpec[] = [
  f('relayCount', 'integer', { nullable: false }),
  f('currentState', 'booleanArray', { nullable: false }),
  f('desiredState', 'nullableBooleanArray', { nullable: false }),
];

const BOILER: readonly FieldSpec[] = [
  ...nums('status'),
  f('vendorStatusString', 'string'),
  f('boilerMode', 'string', { nullable: false }),
  ...nums('powerAc', ...AC_PHASES, 'frequency'),
  ...nums('temperature', 'temperature2', 'temperature3', 'temperature4'),
  ...nums('targetTemperature', 'minimumTemperature', 'availablePower', 'effectiveMaxPower'),
  ...['operationMode', 'operationState', 'deviceState', 'relayState', 'loadState'].map((n) =>
    f(n, 'any'),
  ),
  ...nums('pwmPercent'),
];

/** Every field of each category's record, in the order the API writes them. */
export const DEVICE_FIELDS: Readonly<Record<DeviceCategory, readonly FieldSpec[]>> = {
  inverter: [...COMMON, ...INVERTER],
  battery: [...COMMON, ...BATTERY],
  energyMeter: [...COMMON, ...ENERGY_METER],
  evCharger: [...COMMON, ...EV_CHARGER],
  relay: [...COMMON, ...RELAY],
  boiler: [...COMMON, ...BOILER],
};

/** Field names of each category's record, in API order. */
export const DEVICE_FIELD_NAMES: Readonly<Record<DeviceCategory, readonly string[]>> = perCategory(
  (c) => DEVICE_FIELDS[c].map((s) => s.name),
);

/** Fields a producer may send in `state`, per category. */
export const INGEST_FIELDS: Readonly<Record<DeviceCategory, readonly FieldSpec[]>> = perCategory(
  (c) => DEVICE_FIELDS[c].filter((s) => !s.owned),
);

/** Fields the creating event of a device must carry (the non-nullable ones). */
export const REQUIRED_ON_CREATE: Readonly<Record<DeviceCategory, readonly string[]>> = perCategory(
  (c) => INGEST_FIELDS[c].filter((s) => !s.nullable).map((s) => s.name),
);

export const PERCENT_FIELDS: readonly string[] = DEVICE_FIELDS.battery
  .filter((s) => s.percent)
  .map((s) => s.name);

/** Trimmed at ingest: null bytes and leading/trailing white space removed. */
export const TRIMMED_FIELDS: readonly string[] = [
  'manufacturer',
  'model',
  'version',
  'serialNumber',
];

const BASE: Record<Exclude<FieldKind, 'sunspec' | 'dateTime' | 'any'>, z.ZodType> = {
  integer: z.int(),
  number: z.number(),
  string: z.string(),
  boolean: z.boolean(),
  booleanArray: z.array(z.boolean()),
  nullableBooleanArray: z.array(z.boolean().nullable()),
};

/** The zod type a producer's value must have for one ingest field. */
export function ingestFieldSchema(spec: FieldSpec): z.ZodType {
  if (spec.kind === 'any') return z.union([z.string(), z.number(), z.boolean(), z.null()]);
  if (spec.kind === 'sunspec') {
    return z
      .int()
      .nullable()
      .meta({ description: 'SunSpec operating state (St); unknown values become null' });
  }
  if (spec.kind === 'dateTime') return z.iso.datetime({ offset: true }).nullable();
  let base = BASE[spec.kind];
  // A negative count has no meaning; reject it rather than serve it.
  if (spec.name === 'relayCount') base = z.int().min(0);
  if (spec.percent)
    base = base.meta({ description: 'percent 0-100; out of range is stored as null' });
  return spec.nullable ? base.nullable() : base;
}

/** The `state` object of a device.state event for one category: every field optional. */
export function stateSchema(category: DeviceCategory) {
  const shape = Object.fromEntries(
    INGEST_FIELDS[category].map((s) => [s.name, ingestFieldSchema(s).optional()]),
  );
  return z.looseObject(shape);
}
