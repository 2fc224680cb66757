import { z } from 'zod';
import {
  DEVICE_CATEGORIES,
  type DeviceCategory,
  perCategory,
  stateSchema,
} from './device-fields.js';
import { installationSchema } from './installation.js';
import { dateTimeSchema, idSchema } from './schema-primitives.js';

// The zod schemas of every event on the three input topics (spec/events.md). The consumers
// validate with them and the producer JSON Schemas are generated from them.

// installations.v1

export const installationUpsertedSchema = z.object({
  type: z.literal('installation.upserted'),
  occurredAt: dateTimeSchema,
  installation: installationSchema,
  companyId: idSchema.nullable(),
});

export const installationDeletedSchema = z.object({
  type: z.literal('installation.deleted'),
  occurredAt: dateTimeSchema,
  installationId: idSchema,
});

export const installationsEventSchema = z.discriminatedUnion('type', [
  installationUpsertedSchema,
  installationDeletedSchema,
]);

export type InstallationUpsertedEvent = z.infer<typeof installationUpsertedSchema>;
/** `occurredAt` is null when the deletion came from a Kafka tombstone. */
export type InstallationDeletedEvent = Omit<
  z.infer<typeof installationDeletedSchema>,
  'occurredAt'
> & { occurredAt: string | null };
export type InstallationsEvent = InstallationUpsertedEvent | InstallationDeletedEvent;

// device-telemetry.v1

export function deviceStateSchema(category: DeviceCategory) {
  return z.object({
    type: z.literal('device.state'),
    installationId: idSchema,
    category: z.literal(category),
    deviceId: idSchema,
    observedAt: dateTimeSchema,
    state: stateSchema(category).meta({
      description: `Any subset of the ${category} fields; other keys are dropped and counted`,
    }),
  });
}

export const DEVICE_STATE_SCHEMAS = perCategory(deviceStateSchema);

export const deviceRemovedSchema = z.object({
  type: z.literal('device.removed'),
  installationId: idSchema,
  category: z.enum(DEVICE_CATEGORIES),
  deviceId: idSchema,
  occurredAt: dateTimeSchema,
});

export const telemetryEventSchema = z.union([
  ...DEVICE_CATEGORIES.map((c) => DEVICE_STATE_SCHEMAS[c]),
  deviceRemovedSchema,
]);

/** A value of a `state` field as validated at ingest. */
export type IngestValue = string | number | boolean | null | ReadonlyArray<boolean | null>;
/** Only the category's known, producer-owned fields; unknown keys are already dropped. */
export type DeviceState = Readonly<Record<string, IngestValue>>;

export interface DeviceStateEvent {
  readonly type: 'device.state';
  readonly installationId: number;
  readonly category: DeviceCategory;
  readonly deviceId: number;
  readonly observedAt: string;
  readonly state: DeviceState;
}
export type DeviceRemovedEvent = z.infer<typeof deviceRemovedSchema>;
export type TelemetryEvent = DeviceStateEvent | DeviceRemovedEvent;

// access-changes.v1

const occurredAt = dateTimeSchema;
export const keyIdSchema = z.string().min(1).max(256);
export const keyHashSchema = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'lower-case hex SHA-256')
  .meta({ description: 'lower-case hex SHA-256 of the whole API key string' });

export const applicationUpsertedSchema = z.object({
  type: z.literal('application.upserted'),
  occurredAt,
  applicationId: idSchema,
  owner: z.object({ type: z.enum(['user', 'company']), id: idSchema }),
  enabled: z.boolean(),
  requestsPerMinute: z.number().int().positive().max(1_000_000_000).optional().meta({
    description:
      "the application's API request budget per minute when quotas are on; absent: the configured default",
  }),
});
export const applicationDeletedSchema = z.object({
  type: z.literal('application.deleted'),
  occurredAt,
  applicationId: idSchema,
});
export const apiKeyCreatedSchema = z.object({
  type: z.literal('apiKey.created'),
  occurredAt,
  keyId: keyIdSchema,
  applicationId: idSchema,
  keyHash: keyHashSchema,
  expiresAt: dateTimeSchema.nullable(),
});
export const apiKeyRevokedSchema = z.object({
  type: z.literal('apiKey.revoked'),
  occurredAt,
  keyId: keyIdSchema,
});
const grant = { occurredAt, applicationId: idSchema, installationId: idSchema };
export const grantAddedSchema = z.object({ type: z.literal('grant.added'), ...grant });
export const grantRemovedSchema = z.object({ type: z.literal('grant.removed'), ...grant });
const membership = { occurredAt, userId: idSchema, installationId: idSchema };
export const membershipAddedSchema = z.object({
  type: z.literal('membership.added'),
  ...membership,
});
export const membershipRemovedSchema = z.object({
  type: z.literal('membership.removed'),
  ...membership,
});

export const accessEventSchema = z.discriminatedUnion('type', [
  applicationUpsertedSchema,
  applicationDeletedSchema,
  apiKeyCreatedSchema,
  apiKeyRevokedSchema,
  grantAddedSchema,
  grantRemovedSchema,
  membershipAddedSchema,
  membershipRemovedSchema,
]);

/** Removal events may come from a tombstone, which carries no `occurredAt`. */
type FromTombstone<T extends { occurredAt: string }> = Omit<T, 'occurredAt'> & {
  occurredAt: string | null;
};
export type ApplicationUpsertedEvent = z.infer<typeof applicationUpsertedSchema>;
export type ApplicationDeletedEvent = FromTombstone<z.infer<typeof applicationDeletedSchema>>;
export type ApiKeyCreatedEvent = z.infer<typeof apiKeyCreatedSchema>;
export type ApiKeyRevokedEvent = FromTombstone<z.infer<typeof apiKeyRevokedSchema>>;
export type GrantAddedEvent = z.infer<typeof grantAddedSchema>;
export type GrantRemovedEvent = FromTombstone<z.infer<typeof grantRemovedSchema>>;
export type MembershipAddedEvent = z.infer<typeof membershipAddedSchema>;
export type MembershipRemovedEvent = FromTombstone<z.infer<typeof membershipRemovedSchema>>;
export type AccessEvent =
  | ApplicationUpsertedEvent
  | ApplicationDeletedEvent
  | ApiKeyCreatedEvent
  | ApiKeyRevokedEvent
  | GrantAddedEvent
  | GrantRemovedEvent
  | MembershipAddedEvent
  | MembershipRemovedEvent;

/** The message key a producer should use for an event (spec/events.md). */
export function expectedMessageKey(
  event: InstallationsEvent | TelemetryEvent | AccessEvent,
): string {
  switch (event.type) {
    case 'installation.upserted':
      return String(event.installation.id);
    case 'installation.deleted':
    case 'device.state':
    case 'device.removed':
      return String(event.installationId);
    case 'application.upserted':
    case 'application.deleted':
      return `app:${event.applicationId}`;
    case 'apiKey.created':
    case 'apiKey.revoked':
      return `key:${event.keyId}`;
    case 'grant.added':
    case 'grant.removed':
      return `grant:${event.applicationId}:${event.installationId}`;
    case 'membership.added':
    case 'membership.removed':
      return `member:${event.userId}:${event.installationId}`;
  }
}

/**
 * A producer's JSON Schema of one of the schemas above: what it accepts as input. The one
 * generator for docs/schemas (draft 2020-12) and the AsyncAPI payloads (draft-07).
 */
export function producerJsonSchema(
  s: z.ZodType,
  title: string,
  target: 'draft-2020-12' | 'draft-07' = 'draft-2020-12',
): Record<string, unknown> {
  return z.toJSONSchema(s.meta({ title }), { target, io: 'input' }) as Record<string, unknown>;
}

/** JSON Schemas for producers, one per default topic name, from the schemas above. */
export function eventJsonSchemas(): Record<string, Record<string, unknown>> {
  const schema = (s: z.ZodType, title: string) => producerJsonSchema(s, title);
  return {
    'installations.v1': schema(installationsEventSchema, 'installations.v1 event'),
    'device-telemetry.v1': schema(telemetryEventSchema, 'device-telemetry.v1 event'),
    'access-changes.v1': schema(accessEventSchema, 'access-changes.v1 event'),
  };
}
