import { z } from 'zod';
import { formatDateTime, parseDateTime } from './date-time.js';
import {
  DEVICE_FIELDS,
  type DeviceCategory,
  type FieldSpec,
  fieldValueSchema,
  outsideRange,
  perCategory,
  REQUIRED_ON_CREATE,
  TRIMMED_FIELDS,
  type ValueRange,
} from './device-fields.js';
import type { DeviceStateEvent, IngestValue } from './events.js';
import { normalizeSunSpecStatus, type SunSpecStatus } from './sunspec.js';

// Applying one device.state event to the last-known record: last-writer-wins by observedAt,
// partial updates, and the ingest clean-ups of spec/events.md.

export type DeviceValue = IngestValue | SunSpecStatus;
/** A device record exactly as the API serves it (every key of its category, in order). */
export type DeviceRecord = Readonly<Record<string, DeviceValue>>;

/** Precise times kept beside the record: its date-times are whole seconds. */
export interface DeviceMeta {
  readonly firstSeenMs: number;
  readonly lastSeenMs: number;
}

export interface ApplyOptions {
  readonly nowMs: number;
  readonly futureSkewSeconds: number;
}

export type ApplyResult =
  | {
      readonly kind: 'applied';
      readonly record: DeviceRecord;
      readonly meta: DeviceMeta;
      /** Fields sent outside their range (percent 0-100, ids, magnitudes), stored as null. */
      readonly nulledFields: readonly string[];
    }
  | {
      /** Older than the last applied event: state untouched, firstSeenDate possibly lowered. */
      readonly kind: 'stale';
      readonly record: DeviceRecord;
      readonly meta: DeviceMeta;
      readonly firstSeenLowered: boolean;
    }
  | {
      readonly kind: 'rejected';
      readonly reason: 'future_observed_at' | 'missing_required_fields';
      readonly detail: string;
    };

/** What ingest does to a field's value besides storing it (events.md's clean-ups). */
const Treat = { Plain: 0, Trim: 1, SunSpec: 2, Ranged: 3 } as const;
type Treat = (typeof Treat)[keyof typeof Treat];

/** Per category, the fields an event may set, by name (the projection-owned ones left out). */
const INGEST_TREATS = perCategory((c) => {
  const trimmed = new Set(TRIMMED_FIELDS);
  const treatOf = (spec: FieldSpec): Treat =>
    trimmed.has(spec.name)
      ? Treat.Trim
      : c === 'inverter' && spec.name === 'status'
        ? Treat.SunSpec
        : spec.range
          ? Treat.Ranged
          : Treat.Plain;
  return new Map(
    DEVICE_FIELDS[c].filter((spec) => !spec.owned).map((spec) => [spec.name, treatOf(spec)]),
  );
});

/** Per category, the range of each ranged field an event may set. */
const INGEST_RANGES = perCategory(
  (c) =>
    new Map(
      DEVICE_FIELDS[c].flatMap((spec) =>
        !spec.owned && spec.range ? [[spec.name, spec.range] as const] : [],
      ),
    ),
);

/**
 * Per category, a record of every key in spec order, all null, with fast properties: a record
 * built key by key (~50 keys) ends in dictionary mode, which makes every JSON.stringify of it at
 * the write edge several times slower and every copy larger. A copy of this one (spread) keeps
 * the fast layout; assigning its existing keys keeps it too.
 */
const TEMPLATES = perCategory((c) => {
  const built: Record<string, null> = {};
  for (const spec of DEVICE_FIELDS[c]) built[spec.name] = null;
  return JSON.parse(JSON.stringify(built)) as Readonly<Record<string, DeviceValue>>;
});

/** Removes NUL bytes anywhere and white space at both ends; blank becomes null (unknown). */
export function cleanText(value: string | null): string | null {
  if (value === null) return null;
  const cleaned = value.replaceAll('\u0000', '').trim();
  return cleaned === '' ? null : cleaned;
}

/** Shared by every event that nulls nothing: no array per event. */
const NOTHING_NULLED: readonly string[] = Object.freeze([]);

/** Meta of a stored record when none was kept: second precision from its date-times. */
export function metaFromRecord(record: DeviceRecord): DeviceMeta | null {
  const first =
    typeof record.firstSeenDate === 'string' ? parseDateTime(record.firstSeenDate) : null;
  const last = typeof record.lastSeenDate === 'string' ? parseDateTime(record.lastSeenDate) : null;
  return first === null || last === null ? null : { firstSeenMs: first, lastSeenMs: last };
}

/**
 * `owned`: the caller owns `current` (a partition owner's memory) and an applied event updates
 * it in place instead of a copy: no ~50-key record per event to allocate and collect.
 */
export function applyDeviceState(
  current: DeviceRecord | null,
  event: DeviceStateEvent,
  opts: ApplyOptions,
  currentMeta?: DeviceMeta,
  owned = false,
): ApplyResult {
  const observedMs = parseDateTime(event.observedAt);
  if (observedMs === null) {
    throw new RangeError(`observedAt not validated: ${event.observedAt}`);
  }
  const skewed = futureSkewRejection('observedAt', event.observedAt, observedMs, opts);
  if (skewed) return skewed;
  const { category, state } = event;
  const meta = current ? (currentMeta ?? metaFromRecord(current)) : null;

  if (current && meta && observedMs < meta.lastSeenMs) {
    if (observedMs >= meta.firstSeenMs) {
      return { kind: 'stale', record: current, meta, firstSeenLowered: false };
    }
    return {
      kind: 'stale',
      record: { ...current, firstSeenDate: formatDateTime(observedMs) },
      meta: { ...meta, firstSeenMs: observedMs },
      firstSeenLowered: true,
    };
  }

  if (!current) {
    const missing = REQUIRED_ON_CREATE[category].filter((name) => !Object.hasOwn(state, name));
    if (missing.length > 0) {
      return {
        kind: 'rejected',
        reason: 'missing_required_fields',
        detail: `a new ${category} needs ${missing.join(', ')}`,
      };
    }
  }

  // What stands (a copy unless owned; or a copy of the all-null template), then the event's
  // fields over it: one pass over the fields the event carries, not every field of the category.
  // Nothing below can fail, so an owned record is never left half updated.
  const next: Record<string, DeviceValue> =
    current === null
      ? { ...TEMPLATES[category] }
      : owned
        ? (current as Record<string, DeviceValue>)
        : { ...current };
  let nulled: string[] | null = null;
  const treats = INGEST_TREATS[category];
  const ranges = INGEST_RANGES[category];
  for (const name in state) {
    const treat = treats.get(name);
    if (treat === undefined || !Object.hasOwn(state, name)) continue;
    const value = state[name] as IngestValue;
    if (treat === Treat.Plain || value === null) next[name] = value;
    else if (treat === Treat.Trim) next[name] = cleanText(value as string);
    else if (treat === Treat.SunSpec) next[name] = normalizeSunSpecStatus(value as number);
    else if (typeof value === 'number' && outsideRange(ranges.get(name) as ValueRange, value)) {
      next[name] = null;
      if (nulled === null) nulled = [name];
      else nulled.push(name);
    } else next[name] = value;
  }
  const firstSeenMs = Math.min(meta?.firstSeenMs ?? observedMs, observedMs);
  next.id = event.deviceId;
  next.installationId = event.installationId;
  // Unchanged first sight: the current record's text, not a second date to format per event.
  const firstSeenDate = current?.firstSeenDate;
  next.firstSeenDate =
    firstSeenMs === meta?.firstSeenMs && typeof firstSeenDate === 'string'
      ? firstSeenDate
      : formatDateTime(firstSeenMs);
  next.lastSeenDate = formatDateTime(observedMs);
  return {
    kind: 'applied',
    record: next,
    meta: { firstSeenMs, lastSeenMs: observedMs },
    nulledFields: nulled ?? NOTHING_NULLED,
  };
}

/**
 * The one clock-skew rule of events.md for observedAt and occurredAt: more than
 * `futureSkewSeconds` ahead of the consumer's clock is rejected. Null when within bounds.
 */
export function futureSkewRejection(
  name: 'observedAt' | 'occurredAt',
  text: string,
  atMs: number,
  opts: ApplyOptions,
): {
  readonly kind: 'rejected';
  readonly reason: 'future_observed_at';
  readonly detail: string;
} | null {
  if (atMs <= opts.nowMs + opts.futureSkewSeconds * 1000) return null;
  return {
    kind: 'rejected',
    reason: 'future_observed_at',
    detail: `${name} ${text} is more than ${opts.futureSkewSeconds}s ahead`,
  };
}

/** The record itself; throws when it lacks a key its category requires (it cannot be served). */
export function checkDeviceRecord(category: DeviceCategory, record: DeviceRecord): DeviceRecord {
  for (const spec of DEVICE_FIELDS[category]) {
    const value = record[spec.name];
    if (value === undefined || (value === null && !spec.nullable)) {
      throw new TypeError(`${category} record lacks required field ${spec.name}`);
    }
  }
  return record;
}

/** The record as ready-to-send JSON: every documented key in spec order, nothing else. */
export function serializeDevice(category: DeviceCategory, record: DeviceRecord): string {
  return JSON.stringify(canonicalRecord(category, checkDeviceRecord(category, record)));
}

/**
 * The record with exactly its category's keys in spec order: itself when it has them (records
 * built by applyDeviceState, or read back from such JSON), else a copy. JSON.stringify of a
 * canonical record is the served JSON, so the write edge serializes records as they are.
 */
export function canonicalRecord(category: DeviceCategory, record: DeviceRecord): DeviceRecord {
  const specs = DEVICE_FIELDS[category];
  let i = 0;
  for (const name in record) if (specs[i++]?.name !== name) return canonicalCopy(specs, record);
  return i === specs.length ? record : canonicalCopy(specs, record);
}

function canonicalCopy(specs: readonly FieldSpec[], record: DeviceRecord): DeviceRecord {
  const out: Record<string, DeviceValue> = {};
  for (const spec of specs) out[spec.name] = record[spec.name] as DeviceValue;
  return out;
}

const sunSpecStatusSchema = z.object({ rawValue: z.int(), name: z.string() });

function storedFieldSchema(category: DeviceCategory, spec: FieldSpec): z.ZodType {
  if (category === 'inverter' && spec.name === 'status') return sunSpecStatusSchema.nullable();
  // Stored values were range-checked at ingest; reading back needs the type only.
  return fieldValueSchema(spec);
}

const STORED_SCHEMAS = perCategory(
  (c) =>
    z.object(
      Object.fromEntries(DEVICE_FIELDS[c].map((s) => [s.name, storedFieldSchema(c, s)])),
    ) as unknown as z.ZodType<Record<string, DeviceValue>>,
);

/**
 * Reads back a record the consumers wrote: a plain parse plus a check that it is an object with
 * every key of its category, which catches bytes that are not a record at all without running
 * the schema over the consumer's own output (~4x the cost of the parse). Throws when the JSON is
 * not such an object. Canonical (canonicalRecord), as every record the fold holds.
 */
export function readStoredDevice(category: DeviceCategory, json: string): DeviceRecord {
  const value: unknown = JSON.parse(json);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`stored ${category} record is not an object`);
  }
  // Every key, and a value where one is required: the fold serves what it read back without
  // checking each record again per event.
  const record = value as Record<string, unknown>;
  for (const spec of DEVICE_FIELDS[category]) {
    const field = record[spec.name];
    if (field === undefined || (field === null && !spec.nullable)) {
      throw new TypeError(`stored ${category} record lacks ${spec.name}`);
    }
  }
  return canonicalRecord(category, value as DeviceRecord);
}

/** Reads a stored record back and validates it against the schema; throws when it is not one. */
export function parseStoredDevice(category: DeviceCategory, json: string): DeviceRecord {
  const result = STORED_SCHEMAS[category].safeParse(JSON.parse(json));
  if (!result.success) {
    throw new TypeError(`stored ${category} record is invalid: ${result.error.message}`);
  }
  return result.data;
}
