import { z } from 'zod';
import { parseDateTime } from './date-time.js';
import { MAX_STRING_LENGTH } from './limits.js';

// Building blocks shared by the event and record schemas.

/** Positive integer within JavaScript's safe range; generators should make it 64-bit. */
export const idSchema = z.int().positive().meta({ format: 'int64' });

/**
 * RFC 3339 date-time with a mandatory offset (`Z` or `±hh:mm`), at most
 * MAX_STRING_LENGTH.dateTime characters: the length first, so an over-long one is
 * `exceeds_limits` whatever it holds (the pattern allows any number of fraction digits).
 */
export const dateTimeSchema = z
  .string()
  .max(MAX_STRING_LENGTH.dateTime, { abort: true })
  .check(z.iso.datetime({ offset: true, abort: true }))
  .refine((s) => parseDateTime(s) !== null, 'date-time out of range');

const canonicalZones = new Set(Intl.supportedValuesOf('timeZone'));
const zoneCache = new Map<string, boolean>();
// IANA names: segments starting with a capital (`Europe/Berlin`, `Etc/GMT+5`, `UTC`, `EST5EDT`).
// This keeps out what ICU also accepts but IANA does not name: `+01:00`, `europe/berlin`.
const IANA_NAME = /^[A-Z][A-Za-z0-9_+-]*(?:\/[A-Z][A-Za-z0-9_+-]*)*$/;

/** True for a real IANA time zone name, canonical or a backward-compatible alias (`UTC`, `Etc/UTC`). */
export function isIanaTimeZone(name: string): boolean {
  if (canonicalZones.has(name)) return true;
  const cached = zoneCache.get(name);
  if (cached !== undefined) return cached;
  let ok = false;
  if (IANA_NAME.test(name)) {
    try {
      new Intl.DateTimeFormat('en', { timeZone: name });
      ok = true;
    } catch {
      ok = false;
    }
  }
  if (zoneCache.size < 10_000) zoneCache.set(name, ok);
  return ok;
}

export const timeZoneSchema = z
  .string()
  .max(MAX_STRING_LENGTH.code)
  .refine(isIanaTimeZone, 'not an IANA time zone name')
  .meta({ description: 'IANA time zone name, e.g. Europe/Berlin' });
