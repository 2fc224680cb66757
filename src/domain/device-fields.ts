import { z } from 'zod';
import { deviceFieldMeaning } from './device-field-meanings.js';
import { MAX_STRING_LENGTH } from './limits.js';

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

/** The category as a named enum of the contracts (`DeviceCategory`). */
export const deviceCategorySchema = z.enum(DEVICE_CATEGORIES);

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
  /**
   * The values it may take (percent 0-100, an id 1 or more, a magnitude 0 or more): the served
   * schema's bounds; a producer's value outside is stored as null (docs/events.md).
   */
  readonly range: ValueRange | null;
  /** Owned by the projection; never accepted from a producer. */
  readonly owned: boolean;
  /** Longest accepted string (kinds `string` and `any`), docs/events.md Limits. */
  readonly maxLength: number;
  /** Unit, sign, range, what null means: from device-field-meanings.ts. */
  readonly description: string;
}

export interface ValueRange {
  readonly min: number;
  /** Infinity: no bound above but the type's (the safe range for integers). */
  readonly max: number;
}
const PERCENT: ValueRange = { min: 0, max: 100 };
/** Ids are positive integers (spec/events.md). */
const ID: ValueRange = { min: 1, max: Number.POSITIVE_INFINITY };
/** read-api.md's "magnitude without sign". */
const MAGNITUDE: ValueRange = { min: 0, max: Number.POSITIVE_INFINITY };

type Opts = {
  nullable?: boolean;
  percent?: boolean;
  range?: ValueRange;
  owned?: boolean;
  maxLength?: number;
};
type Spec = Omit<FieldSpec, 'description'>;
const f = (name: string, kind: FieldKind, o: Opts = {}): Spec => ({
  name,
  kind,
  nullable: o.nullable ?? true,
  percent: o.percent ?? false,
  range: o.range ?? (o.percent ? PERCENT : null),
  owned: o.owned ?? false,
  maxLength: o.maxLength ?? MAX_STRING_LENGTH.name,
});
const nums = (...names: string[]) => names.map((n) => f(n, 'number'));
const series = (prefix: string, count: number) =>
  Array.from({ length: count }, (_, i) => `${prefix}${i + 1}`);
const phases = (prefix: string) => [1, 2, 3].map((i) => `${prefix}L${i}`);

const COMMON: readonly Spec[] = [
  f('id', 'integer', { nullable: false, owned: true, range: ID }),
  f('installationId', 'integer', { owned: true, range: ID }),
  f('gatewayId', 'integer', { range: ID }),
  f('manufacturer', 'string'),
  f('model', 'string'),
  f('version', 'string'),
  f('serialNumber', 'string'),
  f('firstSeenDate', 'dateTime', { owned: true }),
  f('lastSeenDate', 'dateTime', { owned: true }),
];

const AC_PHASES = [...phases('powerAc'), ...phases('voltageAc'), ...phases('currentAc')];

const INVERTER: readonly Spec[] = [
  f('status', 'sunspec'),
  f('vendorStatusString', 'string', { maxLength: MAX_STRING_LENGTH.text }),
  f('isOffGrid', 'boolean'),
  f('maxChargePower', 'integer', { range: MAGNITUDE }),
  f('maxDischargePower', 'integer', { range: MAGNITUDE }),
  ...nums('powerAc', ...AC_PHASES),
  ...nums('frequency', 'powerApparentAc', 'powerReactiveAc', 'powerFactor', 'backupPowerAc'),
  ...nums('powerDc', 'powerDcPvTotal'),
  ...nums(...series('powerDcPv', 6), ...series('voltageDcPv', 6), ...series('currentDcPv', 6)),
  ...nums('temperature'),
];

const BATTERY: readonly Spec[] = [
  f('inverterId', 'integer', { range: ID }),
  f('status', 'integer'),
  ...nums('powerDc', 'voltageDc', 'currentDc'),
  f('soe', 'number', { percent: true }),
  f('soh', 'number', { percent: true }),
  ...nums('temperature', 'minCellTemperature', 'avgCellTemperature', 'maxCellTemperature'),
  ...nums('minCellVoltage', 'avgCellVoltage', 'maxCellVoltage'),
  ...nums('ratedEnergy', 'maximumEnergy', 'availableEnergy'),
  f('maxChargeContinuousPower', 'number', { range: MAGNITUDE }),
  f('maxDischargeContinuousPower', 'number', { range: MAGNITUDE }),
  f('minSoe', 'integer', { percent: true }),
  f('maxSoe', 'integer', { percent: true }),
];

const ENERGY_METER: readonly Spec[] = [
  ...nums('powerAc', ...AC_PHASES, 'frequency'),
  ...nums('totalImportAc', 'totalExportAc', 'dailyImportAc', 'dailyExportAc'),
  f('options', 'string', { nullable: false }),
];

const EV_CHARGER: readonly Spec[] = [
  f('mode', 'string', { nullable: false }),
  f('requireAuthorization', 'boolean'),
  f('supportsBiDirectionalCharging', 'boolean', { nullable: false }),
  ...nums('maxChargingCurrent', 'currentMaxChargingCurrent', 'status'),
  f('vendorStatusString', 'string', { maxLength: MAX_STRING_LENGTH.text }),
  ...nums('powerOffered', 'powerAc', ...AC_PHASES, 'frequencyAc'),
  ...nums('powerDc', 'voltageDc', 'currentDc', 'temperature'),
];

const RELAY: readonly Spec[] = [
  f('relayCount', 'integer', { nullable: false }),
  f('currentState', 'booleanArray', { nullable: false }),
  f('desiredState', 'nullableBooleanArray', { nullable: false }),
];

const BOILER: readonly Spec[] = [
  ...nums('status'),
  f('vendorStatusString', 'string', { maxLength: MAX_STRING_LENGTH.text }),
  f('boilerMode', 'string', { nullable: false }),
  ...nums('powerAc', ...AC_PHASES, 'frequency'),
  ...nums('temperature', 'temperature2', 'temperature3', 'temperature4'),
  ...nums('targetTemperature', 'minimumTemperature', 'availablePower', 'effectiveMaxPower'),
  ...['operationMode', 'operationState', 'deviceState', 'relayState', 'loadState'].map((n) =>
    f(n, 'any'),
  ),
  ...nums('pwmPercent'),
];

const described = (category: DeviceCategory, specs: readonly Spec[]): readonly FieldSpec[] =>
  specs.map((s) => ({ ...s, description: deviceFieldMeaning(category, s.name) }));

/** Every field of each category's record, in the order the API writes them. */
export const DEVICE_FIELDS: Readonly<Record<DeviceCategory, readonly FieldSpec[]>> = {
  inverter: described('inverter', [...COMMON, ...INVERTER]),
  battery: described('battery', [...COMMON, ...BATTERY]),
  energyMeter: described('energyMeter', [...COMMON, ...ENERGY_METER]),
  evCharger: described('evCharger', [...COMMON, ...EV_CHARGER]),
  relay: described('relay', [...COMMON, ...RELAY]),
  boiler: described('boiler', [...COMMON, ...BOILER]),
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

/** An integer as generators should type it: 64-bit (its values are within the safe range). */
export const int64 = () => z.int().meta({ format: 'int64' });

const BASE: Record<
  Exclude<FieldKind, 'sunspec' | 'dateTime' | 'any' | 'string'>,
  () => z.ZodType
> = {
  integer: int64,
  number: () => z.number(),
  boolean: () => z.boolean(),
  booleanArray: () => z.array(z.boolean()),
  nullableBooleanArray: () => z.array(z.boolean().nullable()),
};

/**
 * The value of a field read-api.md gives no type (the boiler's operationMode, …): one named
 * schema of the contracts (`PassThroughValue`), so a generator makes one type of it.
 */
export const passThroughValueSchema = z
  .union([z.string().max(MAX_STRING_LENGTH.name), z.number(), z.boolean()])
  .meta({ description: 'A device-reported value passed through: a string, number or boolean.' });

const SUNSPEC_INGEST =
  'SunSpec operating state integer (model 101-103 St), served normalized to { rawValue, name }: 1 OFF, 2 SLEEPING, 3 STARTING, 4 MPPT, 5 THROTTLED, 6 SHUTTING_DOWN, 7 FAULT, 8 STANDBY; any other value is served as null.';
/** What ingest does with a value outside a field's range, as its description says it. */
const outsideText = (r: ValueRange): string =>
  `Sent ${Number.isFinite(r.max) ? `outside ${r.min}-${r.max}` : r.min === 0 ? 'negative' : `below ${r.min}`}, it is stored as null (the rest of the event applies).`;

/** Whether a number is outside a field's range (ingest stores it as null). */
export const outsideRange = (r: ValueRange, value: number): boolean =>
  value < r.min || value > r.max;

/** A number type within a range: `int` for integers, with its JSON Schema bounds. */
function withinRange(kind: FieldKind, percent: boolean, r: ValueRange): z.ZodType {
  if (kind === 'integer') {
    const int = (percent ? z.int() : int64()).min(r.min);
    return Number.isFinite(r.max) ? int.max(r.max) : int;
  }
  const n = z.number().min(r.min);
  return Number.isFinite(r.max) ? n.max(r.max) : n;
}

/** A field's value type, undescribed; `served`: as the API writes it (within its range). */
export function fieldValueSchema(spec: FieldSpec, served = false): z.ZodType {
  let base: z.ZodType;
  if (spec.kind === 'any') base = passThroughValueSchema;
  else if (spec.kind === 'sunspec') base = int64();
  else if (spec.kind === 'dateTime') base = z.iso.datetime({ offset: true });
  else if (spec.kind === 'string') base = z.string().max(spec.maxLength);
  // A negative count has no meaning; reject it rather than serve it.
  else if (spec.name === 'relayCount') base = int64().min(0);
  else if (spec.range && served) base = withinRange(spec.kind, spec.percent, spec.range);
  else base = BASE[spec.kind]();
  // The sunspec status is nullable whatever the table says: unknown values become null.
  return spec.nullable || spec.kind === 'sunspec' || spec.kind === 'any' ? base.nullable() : base;
}

/** The zod type a producer's value must have for one ingest field, with its description. */
export function ingestFieldSchema(spec: FieldSpec): z.ZodType {
  const description =
    spec.kind === 'sunspec'
      ? SUNSPEC_INGEST
      : spec.range
        ? `${spec.description} ${outsideText(spec.range)}`
        : spec.description;
  return fieldValueSchema(spec).meta({ description });
}

/** The `state` object of a device.state event for one category: every field optional. */
export function stateSchema(category: DeviceCategory) {
  const shape = Object.fromEntries(
    INGEST_FIELDS[category].map((s) => [s.name, ingestFieldSchema(s).optional()]),
  );
  return z.looseObject(shape);
}
