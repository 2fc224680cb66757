import { z } from 'zod';
import { formatDateTime, parseDateTime } from './date-time.js';
import { MAX_STRING_LENGTH } from './limits.js';
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

/** The kind of installation, a named enum of the contracts (`InstallationType`). */
export const installationTypeSchema = z.enum(['private', 'commercial']);

const text = (max: number, description: string) => z.string().max(max).meta({ description });

/** The meaning of each field, shared by the event's and the response's schema. */
export const INSTALLATION_MEANINGS = {
  id: "The installation's id: unique, a positive integer within JavaScript's safe range.",
  name: 'Display name.',
  type: 'Kind of installation: `private` or `commercial`.',
  address: 'Street address.',
  postalCode: 'Postal code.',
  city: 'City.',
  country: 'Country code, as the platform records it.',
  timezone: 'IANA time zone name of the installation, e.g. Europe/Berlin.',
  latitude: 'Latitude, decimal degrees (-90 to 90, north positive); null: unknown.',
  longitude: 'Longitude, decimal degrees (-180 to 180, east positive); null: unknown.',
  altitude: 'Altitude, metres; null: unknown.',
  creationDate: 'When the installation was created; null: unknown.',
} as const satisfies Record<(typeof INSTALLATION_FIELDS)[number], string>;
const m = INSTALLATION_MEANINGS;

export const installationSchema = z
  .object({
    id: idSchema.meta({ description: m.id }),
    name: text(MAX_STRING_LENGTH.name, m.name),
    type: installationTypeSchema.meta({ description: m.type }),
    address: text(MAX_STRING_LENGTH.text, m.address),
    postalCode: text(MAX_STRING_LENGTH.code, m.postalCode),
    city: text(MAX_STRING_LENGTH.name, m.city),
    country: text(MAX_STRING_LENGTH.code, m.country),
    timezone: timeZoneSchema.meta({ description: m.timezone }),
    // Decimal degrees only exist in these ranges; anything else is a producer bug.
    latitude: z.number().min(-90).max(90).nullable().meta({ description: m.latitude }),
    longitude: z.number().min(-180).max(180).nullable().meta({ description: m.longitude }),
    altitude: z.number().nullable().meta({ description: m.altitude }),
    creationDate: dateTimeSchema.nullable().meta({ description: m.creationDate }),
  })
  .meta({
    title: 'Installation',
    description: 'An installation: all twelve fields always present, null where unknown.',
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
