import { z } from 'zod';
import { formatDateTime, parseDateTime } from './date-time.js';
import { dateTimeSchema, idSchema, timeZoneSchema } from './schema-primitives.js';

// The Installation record of read-api.md: twelve keys, always present, in this order.

export const INSTALLATION_FIELDS = [
  'id',
  'name',
  'type',
  'address',
  'postalCode',
  'city',
  'country',
  'timezone',
  'latitude',
  'longitude',
  'altitude',
  'creationDate',
] as const;

export const installationSchema = z.object({
  id: idSchema,
  name: z.string(),
  type: z.enum(['private', 'commercial']),
  address: z.string(),
  postalCode: z.string(),
  city: z.string(),
  country: z.string(),
  timezone: timeZoneSchema,
  // Decimal degrees only exist in these ranges; anything else is a producer bug.
  latitude: z.number().min(-90).max(90).nullable(),
  longitude: z.number().min(-180).max(180).nullable(),
  altitude: z.number().nullable(),
  creationDate: dateTimeSchema.nullable(),
});

export type Installation = z.infer<typeof installationSchema>;

/** The record as ready-to-send JSON: spec key order, `creationDate` as `…+00:00`. */
export function serializeInstallation(record: Installation): string {
  const out: Record<string, unknown> = {};
  for (const key of INSTALLATION_FIELDS) out[key] = record[key];
  out.creationDate = normalizeDateTime(record.creationDate);
  return JSON.stringify(out);
}

function normalizeDateTime(value: string | null): string | null {
  if (value === null) return null;
  const ms = parseDateTime(value);
  if (ms === null) throw new RangeError(`invalid creationDate: ${value}`);
  return formatDateTime(ms);
}
