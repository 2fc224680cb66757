import { z } from 'zod';
import {
  CATEGORY_ARRAY_NAME,
  DEVICE_CATEGORIES,
  DEVICE_FIELDS,
  type DeviceCategory,
  type FieldSpec,
  ingestFieldSchema,
  perCategory,
} from '../../src/domain/device-fields.js';
import type { EnergyFlowData } from '../../src/domain/energy-flow.js';
import { installationSchema } from '../../src/domain/installation.js';

// The zod schemas of every response body, from the domain's record definitions and the error
// catalog; the OpenAPI document is generated from these.

// The one form the API writes: UTC with an explicit `+00:00` offset, whole seconds.
const dateTime = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/)
  .meta({ format: 'date-time', example: '2024-05-01T12:00:00+00:00' });

const sunSpecStatus = z
  .object({ rawValue: z.int(), name: z.string() })
  .meta({ description: 'normalized SunSpec operating state' });

function recordField(category: DeviceCategory, spec: FieldSpec): z.ZodType {
  if (category === 'inverter' && spec.name === 'status') return sunSpecStatus.nullable();
  if (spec.kind === 'dateTime') return dateTime.nullable();
  const base = ingestFieldSchema({ ...spec, percent: false });
  return spec.percent ? base.meta({ description: 'percent 0-100' }) : base;
}

export const deviceRecordSchemas = perCategory((c) =>
  z.object(Object.fromEntries(DEVICE_FIELDS[c].map((s) => [s.name, recordField(c, s)]))),
);

export const installationRecordSchema = installationSchema.extend({
  creationDate: dateTime.nullable(),
});

const watts = (description: string) =>
  z
    .int()
    .nullable()
    .meta({ description: `${description}, W` });

export const energyFlowDataSchema = z.object({
  inverterPower: watts("sum of online inverters' powerAc"),
  solarPower: watts("sum of online inverters' PV production"),
  batteryPower: watts("sum of online batteries' powerDc; positive charging"),
  batterySoe: z.int().nullable().meta({ description: 'percent 0-100, ratedEnergy-weighted mean' }),
  gridPower: watts("minus the sum of online energy meters' powerAc; positive import"),
  housePower: watts('house consumption excluding EV charger and boiler, floored at 0'),
  evChargerPower: watts("sum of online EV chargers' powerAc"),
  boilerPower: watts("sum of online boilers' powerAc"),
  lastUpdated: dateTime.meta({ description: 'latest lastSeenDate among online devices' }),
}) satisfies z.ZodType<EnergyFlowData>;

export const installationsResponseSchema = z.object({
  valid: z.literal(true),
  installations: z.array(installationRecordSchema),
  nextCursor: z.string().optional().meta({
    description:
      'Only on a page (`limit` sent) that more installations follow: the `cursor` of the next page',
  }),
});

export const devicesResponseSchema = z.object({
  valid: z.literal(true),
  installationId: z.int(),
  ...(Object.fromEntries(
    DEVICE_CATEGORIES.map((c) => [CATEGORY_ARRAY_NAME[c], z.array(deviceRecordSchemas[c])]),
  ) as Record<string, z.ZodArray<z.ZodType>>),
});

export const energyFlowResponseSchema = z.object({
  valid: z.literal(true),
  installationId: z.int(),
  data: energyFlowDataSchema.nullable().meta({ description: 'null when no device is online' }),
});

/** An error body whose `error` is one of `codes` (those one endpoint may answer at one status). */
export function errorResponseSchema(codes: readonly string[]) {
  return z.object({
    valid: z.literal(false),
    error: z.enum(codes as [string, ...string[]]),
  });
}

/** beyond.md §4: the bulk energy flow, `data` exactly as the single endpoint serves it. */
export const bulkEnergyFlowResponseSchema = z.object({
  valid: z.literal(true),
  flows: z
    .array(
      z.object({
        installationId: z.int(),
        data: energyFlowDataSchema
          .nullable()
          .meta({ description: 'null when no device is online' }),
      }),
    )
    .meta({ description: 'the ids the caller may read, ascending' }),
  notFound: z.array(z.int()).meta({
    description: 'ids that do not exist or are not accessible (one case, on purpose), ascending',
  }),
});
