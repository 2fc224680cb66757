import { parseDateTime } from './date-time.js';
import {
  type DeviceCategory,
  type FieldSpec,
  INGEST_FIELDS,
  perCategory,
} from './device-fields.js';
import { MAX_STRING_LENGTH } from './limits.js';

// A fast acceptance test for device.state, the one event type that arrives by the thousand per
// second: plain type checks built from the same field table as the zod schemas. It only ever
// says "zod would accept this" or "ask zod": a message it does not accept goes through
// DEVICE_STATE_SCHEMAS as before, so what is rejected, and why, stays zod's answer.
// test/unit/device-state-check.test.ts holds it to that on generated and mutated events.

type Check = (value: unknown) => boolean;

const isSafeInt: Check = (v) => Number.isSafeInteger(v); // z.int()
const isNumber: Check = (v) => typeof v === 'number' && Number.isFinite(v); // z.number()
const isBoolean: Check = (v) => typeof v === 'boolean';

function checkOf(spec: FieldSpec): Check | null {
  let base: Check;
  switch (spec.kind) {
    case 'integer':
    case 'sunspec':
      base = spec.name === 'relayCount' ? (v) => isSafeInt(v) && (v as number) >= 0 : isSafeInt;
      break;
    case 'number':
      base = isNumber;
      break;
    case 'string':
      base = (v) => typeof v === 'string' && v.length <= spec.maxLength;
      break;
    case 'boolean':
      base = isBoolean;
      break;
    case 'booleanArray':
      base = (v) => Array.isArray(v) && v.every(isBoolean);
      break;
    case 'nullableBooleanArray':
      base = (v) => Array.isArray(v) && v.every((b) => b === null || isBoolean(b));
      break;
    case 'any':
      return (v) =>
        v === null ||
        (typeof v === 'string' && v.length <= spec.maxLength) ||
        isNumber(v) ||
        isBoolean(v);
    default:
      // Not an ingest kind today (date-times are projection-owned): leave it to zod.
      return null;
  }
  // The sunspec status is nullable whatever the table says (fieldValueSchema).
  return spec.nullable || spec.kind === 'sunspec' ? (v) => v === null || base(v) : base;
}

const CHECKS = perCategory((c) => {
  const checks = new Map<string, Check>();
  for (const spec of INGEST_FIELDS[c]) {
    const check = checkOf(spec);
    if (check === null) return null;
    checks.set(spec.name, check);
  }
  return checks;
});

const isId = (v: unknown) => isSafeInt(v) && (v as number) > 0;

/**
 * When DEVICE_STATE_SCHEMAS[category] surely accepts `obj` (already known to have type
 * device.state and this category): how many keys of its `state` the category does not know (the
 * parser drops them), counted in the same pass. Null means "not sure", never "invalid".
 */
export function surelyValidDeviceState(
  obj: Readonly<Record<string, unknown>>,
  category: DeviceCategory,
): number | null {
  const checks = CHECKS[category];
  if (checks === null) return null;
  if (!isId(obj.installationId) || !isId(obj.deviceId)) return null;
  const at = obj.observedAt;
  if (typeof at !== 'string' || at.length > MAX_STRING_LENGTH.dateTime) return null;
  if (parseDateTime(at) === null) return null;
  const state = obj.state;
  if (state === null || typeof state !== 'object' || Array.isArray(state)) return null;
  let unknown = 0;
  for (const name in state) {
    if (!Object.hasOwn(state, name)) continue;
    const check = checks.get(name);
    if (check === undefined) unknown++;
    else if (!check((state as Record<string, unknown>)[name])) return null;
  }
  return unknown;
}
