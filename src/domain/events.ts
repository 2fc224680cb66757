import { z } from 'zod';
import {
  DEVICE_CATEGORIES,
  type DeviceCategory,
  deviceCategorySchema,
  perCategory,
  stateSchema,
} from './device-fields.js';
import { installationSchema } from './installation.js';
import { contractJsonSchema } from './json-schema.js';
import { MAX_STRING_LENGTH } from './limits.js';
import { dateTimeSchema, idSchema } from './schema-primitives.js';

// The zod schemas of every event on the three input topics (spec/events.md). The consumers
// validate with them and the producer JSON Schemas are generated from them.

/** A name as the contracts write it: `energyMeter` -> `EnergyMeter`. */
export const pascal = (s: string) => `${s.charAt(0).toUpperCase()}${s.slice(1)}`;

// Descriptions of the fields several events share.
const eventType = <T extends string>(type: T) =>
  z.literal(type).meta({ description: `The event type: always \`${type}\`.` });
const occurredAtOf = (what: string) =>
  dateTimeSchema.meta({
    description: `When ${what} happened at the source: RFC 3339 with an offset (Z or +hh:mm). Last writer wins by it.`,
  });
const installationIdOf = (what: string) => idSchema.meta({ description: what });
const applicationIdOf = (what: string) => idSchema.meta({ description: what });

// installations.v1

export const installationUpsertedSchema = z
  .object({
    type: eventType('installation.upserted'),
    occurredAt: occurredAtOf('the change'),
    installation: installationSchema.meta({
      description: 'The installation as the API serves it: all twelve fields, null where unknown.',
    }),
    companyId: idSchema.nullable().meta({
      description:
        "The owning company's id: a company-owned application reads the installation through it. null: no company.",
    }),
  })
  .meta({
    title: 'InstallationUpserted',
    description: 'An installation and its owning company; last writer wins by occurredAt.',
  });

export const installationDeletedSchema = z
  .object({
    type: eventType('installation.deleted'),
    occurredAt: occurredAtOf('the deletion'),
    installationId: installationIdOf(
      'The installation to delete, with its devices and energy flow; also the message key.',
    ),
  })
  .meta({
    title: 'InstallationDeleted',
    description: 'Removes the installation, its devices and its energy flow from every response.',
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

/** The `state` object of each category, named in the contracts (`InverterState`, …). */
export const STATE_SCHEMAS = perCategory((c) =>
  stateSchema(c).meta({
    title: `${pascal(c)}State`,
    description: `The ${c} fields a producer may send, each optional; other keys are dropped and counted.`,
  }),
);

export function deviceStateSchema(category: DeviceCategory) {
  return z
    .object({
      type: eventType('device.state'),
      installationId: installationIdOf(
        'The installation the device belongs to from this event on; also the message key (decimal).',
      ),
      // Titled: a generator that turns the discriminator into an enum names it by this.
      category: z.literal(category).meta({
        title: `${pascal(category)}Category`,
        description: CATEGORY_DESCRIPTION,
      }),
      deviceId: idSchema.meta({ description: DEVICE_ID_DESCRIPTION }),
      observedAt: dateTimeSchema.meta({
        description:
          "When the device was observed in this state: RFC 3339 with an offset. Becomes the device's lastSeenDate; an event older than it is ignored, one more than 5 minutes ahead of the consumer's clock is rejected.",
      }),
      state: STATE_SCHEMAS[category].meta({
        description: `Any subset of the ${category} fields; a field present overwrites (null sets it unknown), one absent keeps its value. Other keys are dropped and counted. A device's first event must carry the category's non-nullable fields.`,
      }),
    })
    .meta({
      title: `${pascal(category)}StateEvent`,
      description: `A ${category}'s observed state: any subset of its fields; last writer wins by observedAt.`,
    });
}

const CATEGORY_DESCRIPTION =
  'Device category; with deviceId the identity of the device: inverter, battery, energyMeter, evCharger, relay or boiler.';
const DEVICE_ID_DESCRIPTION = 'The device id, unique within its category.';

export const DEVICE_STATE_SCHEMAS = perCategory(deviceStateSchema);

export const deviceRemovedSchema = z
  .object({
    type: eventType('device.removed'),
    installationId: installationIdOf('The installation the device is removed from; also the key.'),
    category: deviceCategorySchema.meta({ description: CATEGORY_DESCRIPTION }),
    deviceId: idSchema.meta({ description: DEVICE_ID_DESCRIPTION }),
    occurredAt: occurredAtOf('the removal'),
  })
  .meta({
    title: 'DeviceRemoved',
    description: "Removes a device from its installation's device list and energy flow.",
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

const occurredAt = occurredAtOf('the change');
export const keyIdSchema = z.string().min(1).max(MAX_STRING_LENGTH.name).meta({
  description:
    "The key's opaque id (not the key): 1 to 256 characters; also in the message key `key:<keyId>`.",
});
export const keyHashSchema = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'lower-case hex SHA-256')
  .meta({ description: 'lower-case hex SHA-256 of the whole API key string' });

/** The kind of owner, a named enum of the contracts (`OwnerType`). */
export const ownerTypeSchema = z.enum(['user', 'company']);

export const applicationOwnerSchema = z
  .object({
    type: ownerTypeSchema.meta({
      description:
        'user: reads installations its owner is a direct member of; company: installations of that company.',
    }),
    id: idSchema.meta({ description: 'The owning user id or company id.' }),
  })
  .meta({
    title: 'ApplicationOwner',
    description: "The application's owner, whose own access it needs as well as a grant.",
  });

const APPLICATION_ID = 'The application; also in the message key `app:<applicationId>`.';

export const applicationUpsertedSchema = z
  .object({
    type: eventType('application.upserted'),
    occurredAt,
    applicationId: applicationIdOf(APPLICATION_ID),
    owner: applicationOwnerSchema.meta({
      description: "Who owns the application: its reads also need the owner's own access.",
    }),
    enabled: z
      .boolean()
      .meta({ description: 'false: every key of the application stops working.' }),
    requestsPerMinute: z.number().int().positive().max(1_000_000_000).optional().meta({
      description:
        "the application's API request budget per minute when quotas are on; absent: the configured default",
    }),
  })
  .meta({
    title: 'ApplicationUpserted',
    description: 'An application, its owner, enabled or not.',
  });
export const applicationDeletedSchema = z
  .object({
    type: eventType('application.deleted'),
    occurredAt,
    applicationId: applicationIdOf(APPLICATION_ID),
  })
  .meta({
    title: 'ApplicationDeleted',
    description: 'Deletes an application; its keys stop working.',
  });
export const apiKeyCreatedSchema = z
  .object({
    type: eventType('apiKey.created'),
    occurredAt,
    keyId: keyIdSchema,
    applicationId: applicationIdOf('The application the key authenticates.'),
    keyHash: keyHashSchema,
    expiresAt: dateTimeSchema.nullable().meta({
      description: 'When the key stops working; null: it does not expire.',
    }),
  })
  .meta({
    title: 'ApiKeyCreated',
    description: 'An API key, by the SHA-256 of the whole key string; never the key itself.',
  });
export const apiKeyRevokedSchema = z
  .object({
    type: eventType('apiKey.revoked'),
    occurredAt,
    keyId: keyIdSchema,
  })
  .meta({ title: 'ApiKeyRevoked', description: 'Revokes an API key.' });
const grant = {
  occurredAt,
  applicationId: applicationIdOf(
    'The application granted; key `grant:<applicationId>:<installationId>`.',
  ),
  installationId: installationIdOf('The installation granted.'),
};
export const grantAddedSchema = z.object({ type: eventType('grant.added'), ...grant }).meta({
  title: 'GrantAdded',
  description:
    "Grants an application read access to an installation (its owner's access is needed too).",
});
export const grantRemovedSchema = z.object({ type: eventType('grant.removed'), ...grant }).meta({
  title: 'GrantRemoved',
  description: 'Removes a grant.',
});
const membership = {
  occurredAt,
  userId: idSchema.meta({
    description: 'The member user; key `member:<userId>:<installationId>`.',
  }),
  installationId: installationIdOf('The installation the user is a direct member of.'),
};
export const membershipAddedSchema = z
  .object({
    type: eventType('membership.added'),
    ...membership,
  })
  .meta({
    title: 'MembershipAdded',
    description: "A user's direct membership of an installation.",
  });
export const membershipRemovedSchema = z
  .object({
    type: eventType('membership.removed'),
    ...membership,
  })
  .meta({ title: 'MembershipRemoved', description: 'Removes a membership.' });

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
  return contractJsonSchema(s.meta({ title }), { target, io: 'input' });
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
