import type { z } from 'zod';
import type { RejectReason } from './dead-letter.js';
import {
  DEVICE_CATEGORIES,
  type DeviceCategory,
  INGEST_FIELDS,
  isDeviceCategory,
  perCategory,
} from './device-fields.js';
import { surelyValidDeviceState } from './device-state-check.js';
import {
  type AccessEvent,
  accessEventSchema,
  DEVICE_STATE_SCHEMAS,
  type DeviceState,
  type DeviceStateEvent,
  deviceRemovedSchema,
  type IngestValue,
  type InstallationsEvent,
  installationsEventSchema,
  type TelemetryEvent,
} from './events.js';
import { INSTALLATION_FIELDS } from './installation.js';
import { MAX_MESSAGE_BYTES } from './limits.js';

// Kafka message -> validated event, or a rejection the consumer dead-letters as is.

export type ParseResult<E> =
  | { readonly ok: true; readonly event: E; readonly droppedKeys: readonly string[] }
  | { readonly ok: false; readonly reason: RejectReason; readonly detail: string };

/**
 * A message value: its bytes, or the object a registry-framed value decoded to (the consumers'
 * registry decoding step), which is then validated exactly as the JSON form.
 */
type Bytes = string | Uint8Array | Readonly<Record<string, unknown>> | null | undefined;

const MAX_DETAIL = 500; // header value: enough to debug, bounded
const utf8 = new TextDecoder('utf-8', { fatal: true });

const reject = (reason: RejectReason, detail: string): ParseResult<never> => ({
  ok: false,
  reason,
  detail: detail.length > MAX_DETAIL ? `${detail.slice(0, MAX_DETAIL - 1)}…` : detail,
});

function decode(value: string | Uint8Array): string | null {
  if (typeof value === 'string') return value;
  try {
    return utf8.decode(value);
  } catch {
    return null;
  }
}

function readObject(
  value: Exclude<Bytes, null | undefined>,
): Record<string, unknown> | ParseResult<never> {
  if (typeof value !== 'string' && !(value instanceof Uint8Array)) {
    return value as Record<string, unknown>;
  }
  const text = decode(value);
  if (text === null) return reject('invalid_json', 'value is not valid UTF-8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Never the parser's message: it quotes the input, which may hold a secret.
    return reject('invalid_json', `value is not valid JSON (${Buffer.byteLength(text)} bytes)`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    return reject('invalid_json', 'value is not a JSON object');
  }
  return parsed as Record<string, unknown>;
}

const isRejection = (v: unknown): v is ParseResult<never> =>
  typeof v === 'object' && v !== null && (v as { ok?: unknown }).ok === false;

function describe(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => `${i.path.length ? i.path.join('.') : '(root)'}: ${i.message}`)
    .join('; ');
}

/**
 * zod's messages, but a required field that is absent says so: zod's own reads "expected number,
 * received undefined", which sends a producer looking for a wrong type.
 */
const PARSE_OPTIONS = {
  error: (issue: { code?: string; input?: unknown }) =>
    issue.code === 'invalid_type' && issue.input === undefined
      ? 'required field is missing'
      : undefined,
};

/** A zod failure as a rejection: a string over its maximum length has a reason of its own. */
function schemaRejection(error: z.ZodError): ParseResult<never> {
  const overLong = error.issues.some((i) => i.code === 'too_big' && i.origin === 'string');
  return reject(overLong ? 'exceeds_limits' : 'schema_violation', describe(error));
}

/**
 * The bounds check of docs/events.md: a value over its topic's maximum is never parsed. A
 * decoded registry value was checked as bytes before it was decoded (consumers/registry-decoding.ts).
 */
export function oversized(
  value: Exclude<Bytes, null | undefined>,
  maxBytes: number,
): ParseResult<never> | null {
  if (typeof value !== 'string' && !(value instanceof Uint8Array)) return null;
  const bytes = typeof value === 'string' ? Buffer.byteLength(value) : value.byteLength;
  return bytes > maxBytes
    ? reject('exceeds_limits', `value is ${bytes} bytes, over this topic's maximum of ${maxBytes}`)
    : null;
}

function checkType(obj: Record<string, unknown>, types: readonly string[]): string | null {
  return typeof obj.type === 'string' && types.includes(obj.type) ? obj.type : null;
}

function unknownType(obj: Record<string, unknown>): ParseResult<never> {
  const t = typeof obj.type === 'string' ? JSON.stringify(obj.type.slice(0, 64)) : 'missing';
  return reject('unknown_event_type', `type ${t} is not an event of this topic`);
}

/** The move protocol's events travel on the service's own topic, never on a producers' one. */
const INTERNAL_TYPES = ['device.released', 'device.seen'];
const internalType = (obj: Record<string, unknown>): ParseResult<never> =>
  reject(
    'unknown_event_type',
    `type ${JSON.stringify(obj.type)} is internal to the service and not accepted on this topic`,
  );

const POSITIVE_DECIMAL = /^[1-9][0-9]{0,15}$/;
function parseId(text: string | undefined): number | null {
  if (text === undefined || !POSITIVE_DECIMAL.test(text)) return null;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : null;
}

const keyText = (key: string | Uint8Array | null | undefined): string | null =>
  key === null || key === undefined ? null : decode(key);

/** installations.v1. A tombstone (null value) under key `42` deletes installation 42. */
export function parseInstallationsMessage(
  value: Bytes,
  key?: string | Uint8Array | null,
): ParseResult<InstallationsEvent> {
  if (value === null || value === undefined) {
    const installationId = parseId(keyText(key) ?? undefined);
    if (installationId === null)
      return reject('invalid_key', 'tombstone key is not an installation id');
    const event = { type: 'installation.deleted', occurredAt: null, installationId } as const;
    return { ok: true, event, droppedKeys: [] };
  }
  const big = oversized(value, MAX_MESSAGE_BYTES.installations);
  if (big) return big;
  const obj = readObject(value);
  if (isRejection(obj)) return obj;
  if (!checkType(obj, ['installation.upserted', 'installation.deleted'])) return unknownType(obj);
  const result = installationsEventSchema.safeParse(obj, PARSE_OPTIONS);
  if (!result.success) return schemaRejection(result.error);
  const raw = obj.installation;
  const droppedKeys =
    raw && typeof raw === 'object'
      ? Object.keys(raw).filter((k) => !(INSTALLATION_FIELDS as readonly string[]).includes(k))
      : [];
  return { ok: true, event: result.data, droppedKeys };
}

/**
 * device-telemetry.v1. Known `state` fields are type-checked (a wrong type rejects the event);
 * other keys, and the projection-owned ones, are dropped and returned in `droppedKeys`.
 */
export function parseTelemetryMessage(value: Bytes): ParseResult<TelemetryEvent> {
  if (value === null || value === undefined) {
    return reject('unexpected_tombstone', 'device-telemetry.v1 carries no tombstones');
  }
  const big = oversized(value, MAX_MESSAGE_BYTES.telemetry);
  if (big) return big;
  const obj = readObject(value);
  if (isRejection(obj)) return obj;
  const type = checkType(obj, ['device.state', 'device.removed']);
  if (!type) return checkType(obj, INTERNAL_TYPES) ? internalType(obj) : unknownType(obj);
  if (type === 'device.removed') {
    const result = deviceRemovedSchema.safeParse(obj, PARSE_OPTIONS);
    if (!result.success) return schemaRejection(result.error);
    return { ok: true, event: result.data, droppedKeys: [] };
  }
  const category = obj.category;
  if (!isDeviceCategory(category)) {
    return reject('schema_violation', `category: must be one of ${DEVICE_CATEGORIES.join(', ')}`);
  }
  type Valid = { installationId: number; deviceId: number; observedAt: string; state: unknown };
  // The common, valid case skips zod (~4x the JSON parse); anything else gets zod's verdict.
  const unknown = surelyValidDeviceState(obj, category);
  let valid = obj as Valid;
  if (unknown === null) {
    const result = DEVICE_STATE_SCHEMAS[category].safeParse(obj, PARSE_OPTIONS);
    if (!result.success) return schemaRejection(result.error);
    valid = result.data;
  }
  const raw = obj.state as Record<string, unknown>;
  // Every key known and checked: the event keeps its own state, no copy of it per event.
  if (unknown === 0)
    return { ok: true, event: stateEvent(valid, category, raw), droppedKeys: NONE };
  const droppedKeys: string[] = [];
  const state = knownState(category, raw, valid.state, droppedKeys);
  return { ok: true, event: stateEvent(valid, category, state), droppedKeys };
}

/** Shared by every event that drops nothing: no array per event. */
const NONE: readonly string[] = Object.freeze([]);

const stateEvent = (
  valid: { installationId: number; deviceId: number; observedAt: string },
  category: DeviceCategory,
  state: Record<string, unknown>,
): DeviceStateEvent => ({
  type: 'device.state',
  installationId: valid.installationId,
  category,
  deviceId: valid.deviceId,
  observedAt: valid.observedAt,
  state: state as DeviceState,
});

/**
 * The known keys of `raw` with their checked values (`input`: zod's output, or `raw` itself);
 * the others' names go to `dropped`, from the raw input: zod's output may already have left out
 * keys such as `__proto__`.
 */
function knownState(
  category: DeviceCategory,
  raw: Record<string, unknown>,
  input: unknown,
  dropped: string[],
): Record<string, IngestValue> {
  const checked = input as Record<string, unknown>;
  const known = KNOWN_STATE_KEYS[category];
  const state: Record<string, IngestValue> = {};
  for (const k in raw) {
    if (!Object.hasOwn(raw, k)) continue;
    if (!known.has(k)) dropped.push(k);
    else if (Object.hasOwn(checked, k)) state[k] = checked[k] as IngestValue;
  }
  return state;
}

const KNOWN_STATE_KEYS = perCategory(
  (c) => new Set<string>(INGEST_FIELDS[c].map((spec) => spec.name)),
);

const ACCESS_TYPES = accessEventSchema.options.map((o) => o.shape.type.value);

/**
 * access-changes.v1. A tombstone removes the fact its key names: `app:17` deletes the
 * application, `key:<keyId>` revokes the key, `grant:17:42` and `member:5:42` remove them.
 */
export function parseAccessMessage(
  value: Bytes,
  key?: string | Uint8Array | null,
): ParseResult<AccessEvent> {
  if (value === null || value === undefined) return accessTombstone(keyText(key));
  const big = oversized(value, MAX_MESSAGE_BYTES.access);
  if (big) return big;
  const obj = readObject(value);
  if (isRejection(obj)) return obj;
  if (!checkType(obj, ACCESS_TYPES)) return unknownType(obj);
  const result = accessEventSchema.safeParse(obj, PARSE_OPTIONS);
  if (!result.success) return schemaRejection(result.error);
  return { ok: true, event: result.data, droppedKeys: [] };
}

function accessTombstone(key: string | null): ParseResult<AccessEvent> {
  const ok = (event: AccessEvent): ParseResult<AccessEvent> => ({
    ok: true,
    event,
    droppedKeys: [],
  });
  const bad = reject('invalid_key', 'tombstone key names no access fact');
  if (key === null) return bad;
  const sep = key.indexOf(':');
  const kind = key.slice(0, sep);
  const rest = key.slice(sep + 1);
  if (sep < 0) return bad;
  if (kind === 'key') {
    return rest.length > 0 && rest.length <= 256
      ? ok({ type: 'apiKey.revoked', occurredAt: null, keyId: rest })
      : bad;
  }
  const ids = rest.split(':').map(parseId);
  if (ids.some((n) => n === null)) return bad;
  const [a, b] = ids as number[];
  if (kind === 'app' && ids.length === 1 && a !== undefined) {
    return ok({ type: 'application.deleted', occurredAt: null, applicationId: a });
  }
  if (ids.length !== 2 || a === undefined || b === undefined) return bad;
  if (kind === 'grant') {
    return ok({ type: 'grant.removed', occurredAt: null, applicationId: a, installationId: b });
  }
  if (kind === 'member') {
    return ok({ type: 'membership.removed', occurredAt: null, userId: a, installationId: b });
  }
  return bad;
}
