import { z } from 'zod';
import {
  CATEGORY_ARRAY_NAME,
  DEVICE_CATEGORIES,
  DEVICE_FIELDS,
  type DeviceCategory,
  type FieldSpec,
  fieldValueSchema,
  int64,
  perCategory,
} from '../../src/domain/device-fields.js';
import type { EnergyFlowData } from '../../src/domain/energy-flow.js';
import { INSTALLATION_MEANINGS, installationSchema } from '../../src/domain/installation.js';
import { SUNSPEC_STATUS_NAMES } from '../../src/domain/sunspec.js';
import { ERROR_CATALOG, type ErrorCode, TRANSPORT_ERRORS } from '../errors/error-catalog.js';

// The zod schemas of every response body, from the domain's record definitions and the error
// catalog, each field with its description; the OpenAPI document is generated from these.

// The one form the API writes: UTC with an explicit `+00:00` offset, whole seconds.
const dateTime = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\+00:00$/)
  .meta({ format: 'date-time', example: '2024-05-01T12:00:00+00:00' });

export const inverterStatusSchema = z
  .object({
    rawValue: z.int().min(1).max(SUNSPEC_STATUS_NAMES.length).meta({
      description: 'The SunSpec operating-state integer (St) the device sent, 1 to 8.',
    }),
    name: z.enum(SUNSPEC_STATUS_NAMES).meta({ description: 'Its SunSpec name.' }),
  })
  .meta({ description: 'Normalized SunSpec operating state of an inverter.' });

function recordField(category: DeviceCategory, spec: FieldSpec): z.ZodType {
  const description = { description: spec.description };
  if (category === 'inverter' && spec.name === 'status')
    return inverterStatusSchema.nullable().meta(description);
  if (spec.kind === 'dateTime') return dateTime.nullable().meta(description);
  return fieldValueSchema(spec, true).meta(description);
}

const CATEGORY_TITLES: Record<DeviceCategory, string> = {
  inverter: 'An inverter',
  battery: 'A battery',
  energyMeter: 'An energy meter',
  evCharger: 'An EV charger',
  relay: 'A relay',
  boiler: 'A boiler',
};

export const deviceRecordSchemas = perCategory((c) =>
  z.object(Object.fromEntries(DEVICE_FIELDS[c].map((s) => [s.name, recordField(c, s)]))).meta({
    description: `${CATEGORY_TITLES[c]}'s last-known state: every field always present, null where unknown. Offline devices are included: check lastSeenDate.`,
  }),
);

export const installationRecordSchema = installationSchema
  .extend({
    creationDate: dateTime.nullable().meta({ description: INSTALLATION_MEANINGS.creationDate }),
  })
  .meta({ description: 'An installation: all twelve fields always present, null where unknown.' });

const watts = (description: string, type = int64()) =>
  type
    .nullable()
    .meta({ description: `${description}, W, a whole number; null: no online device reports it` });

export const energyFlowDataSchema = z
  .object({
    inverterPower: watts(
      "Sum of the online inverters' powerAc (positive: supplied to the AC side)",
    ),
    solarPower: watts(
      'Sum over the online inverters of powerDcPvTotal, or where that is null of the non-null powerDcPv1-6 (positive: production)',
    ),
    batteryPower: watts(
      "Sum of the online batteries' powerDc: positive charging, negative discharging",
    ),
    batterySoe: z.int().min(0).max(100).nullable().meta({
      description:
        "Mean of the online batteries' soe weighted by ratedEnergy (a plain mean if one lacks a positive ratedEnergy), percent 0-100, a whole number; null: no online battery reports soe",
    }),
    gridPower: watts(
      "Minus the sum of the online energy meters' powerAc: positive import, negative export (the opposite of a meter's powerAc)",
    ),
    housePower: watts(
      'House consumption excluding EV charger and boiler: (inverterPower or 0) + gridPower - (evChargerPower or 0) - (boilerPower or 0), floored at 0; null when gridPower is null',
      int64().min(0), // computeEnergyFlow's Math.max(0, …)
    ),
    evChargerPower: watts("Sum of the online EV chargers' powerAc (positive: consumption)"),
    boilerPower: watts("Sum of the online boilers' powerAc (positive: consumption)"),
    lastUpdated: dateTime.meta({ description: 'The latest lastSeenDate among the online devices' }),
  })
  .meta({
    description:
      'The energy flow over the installation\'s online devices (docs/api.md "Energy flow"). Every number is rounded to a whole number.',
  }) satisfies z.ZodType<EnergyFlowData>;

const success = z.literal(true).meta({ description: 'Always true on success.' });
const installationIdField = (what: string) => int64().meta({ description: what });

export const installationsResponseSchema = z
  .object({
    valid: success,
    installations: z.array(installationRecordSchema).meta({
      description:
        'The installations the calling application may read now (a grant, and its owner still has access), by ascending id.',
    }),
    nextCursor: z.string().optional().meta({
      description:
        'Only on a page (`limit` sent) that more installations follow: the `cursor` of the next page',
    }),
  })
  .meta({ description: 'The answer of getInstallations.' });

export const devicesResponseSchema = z
  .object({
    valid: success,
    installationId: installationIdField('The installation asked for.'),
    ...(Object.fromEntries(
      DEVICE_CATEGORIES.map((c) => [
        CATEGORY_ARRAY_NAME[c],
        z.array(deviceRecordSchemas[c]).meta({
          description: `Every ${c} of the installation by ascending id, offline ones too; may be empty.`,
        }),
      ]),
    ) as Record<string, z.ZodArray<z.ZodType>>),
  })
  .meta({
    description: 'The answer of getInstallationDevices: the six device arrays of one installation.',
  });

const flowData = () =>
  energyFlowDataSchema
    .nullable()
    .meta({ description: 'The energy flow; null when no device of the installation is online.' });

export const energyFlowResponseSchema = z
  .object({
    valid: success,
    installationId: installationIdField('The installation asked for.'),
    data: flowData(),
  })
  .meta({ description: 'The answer of getInstallationCurrentEnergyFlow.' });

const codeMeaning = (code: string) =>
  code in ERROR_CATALOG
    ? ERROR_CATALOG[code as ErrorCode].meaning
    : TRANSPORT_ERRORS[code as keyof typeof TRANSPORT_ERRORS].meaning;

/** An error body whose `error` is one of `codes` (those one endpoint may answer at one status). */
export function errorResponseSchema(codes: readonly string[]) {
  return z
    .object({
      valid: z.literal(false).meta({ description: 'Always false on an error.' }),
      error: z.enum(codes as [string, ...string[]]).meta({
        description: `Machine-readable error code: ${codes.map((c) => `\`${c}\` ${codeMeaning(c)}`).join('; ')}.`,
      }),
    })
    .meta({ description: 'The error envelope: check the HTTP status and `error`.' });
}

/** beyond.md §4: one installation's flow in the bulk answer, `data` as the single endpoint's. */
export const installationEnergyFlowSchema = z
  .object({
    installationId: installationIdField('The installation.'),
    data: flowData(),
  })
  .meta({ description: 'The energy flow of one installation of a bulk request.' });

export const bulkEnergyFlowResponseSchema = z
  .object({
    valid: success,
    flows: z
      .array(installationEnergyFlowSchema)
      .meta({ description: 'the ids the caller may read, ascending' }),
    notFound: z.array(int64()).meta({
      description: 'ids that do not exist or are not accessible (one case, on purpose), ascending',
    }),
  })
  .meta({ description: 'The answer of getInstallationsCurrentEnergyFlow.' });

/** beyond.md §5: the events of the energy-flow stream, what a client parses from each `data:`. */
export const flowStreamEnergyFlowEventSchema = z
  .object({
    event: z.literal('energyFlow').meta({ description: 'The SSE `event:` field.' }),
    id: z.string().meta({
      description:
        'The SSE `id:` field: the ETag getInstallationCurrentEnergyFlow would send; send it back as Last-Event-ID on reconnect.',
    }),
    data: energyFlowResponseSchema.meta({
      description:
        'The SSE `data:` field, parsed: the exact body getInstallationCurrentEnergyFlow would serve.',
    }),
  })
  .meta({ description: 'An `energyFlow` event: the current flow, first and on every change.' });

/** What a `revoked` event carries: the codes the single endpoint would answer for the read. */
export const flowStreamRevokedErrorSchema = errorResponseSchema(['UNAUTHORIZED', 'DOESNT_EXIST']);

export const flowStreamRevokedEventSchema = z
  .object({
    event: z.literal('revoked').meta({ description: 'The SSE `event:` field.' }),
    data: flowStreamRevokedErrorSchema.meta({
      description:
        'The SSE `data:` field, parsed: the error envelope the single endpoint would now answer. The stream closes after it.',
    }),
  })
  .meta({ description: 'A `revoked` event: the key may no longer read the installation.' });
