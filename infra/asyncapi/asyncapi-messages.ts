import { z } from 'zod';
import { DEVICE_CATEGORIES } from '../../src/domain/device-fields.js';
import {
  accessEventSchema,
  DEVICE_STATE_SCHEMAS,
  deviceRemovedSchema,
  installationDeletedSchema,
  installationUpsertedSchema,
} from '../../src/domain/events.js';
import { deviceReleasedSchema } from '../../src/projection/device-released.js';
import {
  flowInWords,
  WORKED_EXAMPLE_INSTALLATION,
  WORKED_EXAMPLES,
  workedExamplePayload,
} from './worked-examples.js';

// The messages of the AsyncAPI document, one per event type. Payloads come from the zod schemas
// the consumers validate with (through the same generator as docs/schemas); examples are checked
// against the consumers' own parsers by test/unit/asyncapi-document.test.ts.

const at = '2024-03-01T10:00:00Z';

export interface MessageSpec {
  readonly name: string;
  readonly title: string;
  readonly summary: string;
  /** The zod schema of the value; null: a tombstone (no value). */
  readonly schema: z.ZodType | null;
  /** Its name in components.schemas (the model name generators give it). */
  readonly schemaId?: string;
  readonly key: { readonly description: string; readonly pattern?: string };
  readonly examples: ReadonlyArray<MessageExample>;
  /** Its records in the schema registry's formats (infra/asyncapi/registry-schemas.ts). */
  readonly registrySchemas?: readonly string[];
}

export interface MessageExample {
  readonly key: string;
  readonly payload: unknown;
  /** A machine-friendly name; default: the message's name and the example's number. */
  readonly name?: string;
  /** What the example shows; the key is named after it. */
  readonly summary?: string;
}

const installationKey = { description: 'the installation id, decimal', pattern: '^[1-9][0-9]*$' };

const installation = {
  id: 42,
  name: 'Home',
  type: 'private',
  address: 'Main St 1',
  postalCode: '12345',
  city: 'Berlin',
  country: 'DE',
  timezone: 'Europe/Berlin',
  latitude: 52.52,
  longitude: 13.4,
  altitude: null,
  creationDate: '2023-05-01T08:00:00+02:00',
};

export const INSTALLATIONS_MESSAGES: readonly MessageSpec[] = [
  {
    name: 'installationUpserted',
    title: 'installation.upserted',
    summary: 'An installation and its owning company; last writer wins by occurredAt.',
    schema: installationUpsertedSchema,
    schemaId: 'InstallationUpserted',
    key: installationKey,
    registrySchemas: ['InstallationUpserted'],
    examples: [
      {
        key: '42',
        payload: { type: 'installation.upserted', occurredAt: at, installation, companyId: 7 },
      },
    ],
  },
  {
    name: 'installationDeleted',
    title: 'installation.deleted',
    summary: 'Removes the installation, its devices and its energy flow.',
    schema: installationDeletedSchema,
    schemaId: 'InstallationDeleted',
    key: installationKey,
    registrySchemas: ['InstallationDeleted'],
    examples: [
      {
        key: '42',
        payload: { type: 'installation.deleted', occurredAt: at, installationId: 42 },
      },
    ],
  },
  {
    name: 'installationTombstone',
    title: 'tombstone',
    summary: 'A null value under key `42` deletes installation 42, dated by its Kafka timestamp.',
    schema: null,
    key: installationKey,
    examples: [{ key: '42', payload: null }],
  },
];

export const TELEMETRY_MESSAGES: readonly MessageSpec[] = [
  {
    name: 'deviceState',
    title: 'device.state',
    summary:
      "A device's observed state: any subset of its category's fields; last writer wins by observedAt.",
    schema: z.union(DEVICE_CATEGORIES.map((c) => DEVICE_STATE_SCHEMAS[c])).meta({
      description: 'A device.state event of one of the six categories (by `category`).',
    }),
    schemaId: 'DeviceStateEvent',
    key: installationKey,
    registrySchemas: DEVICE_CATEGORIES.map((c) => `${c.charAt(0).toUpperCase()}${c.slice(1)}State`),
    // One per category, the worked examples of docs/events.md: situation, signs and flow.
    examples: WORKED_EXAMPLES.map((e) => ({
      key: String(WORKED_EXAMPLE_INSTALLATION),
      payload: workedExamplePayload(e),
      name: e.name,
      summary: `${e.situation}. ${e.signs} Energy flow of this device alone: ${flowInWords(e.flow) || 'every field null'}.`,
    })),
  },
  {
    name: 'deviceRemoved',
    title: 'device.removed',
    summary: "Removes a device from its installation's device list and energy flow.",
    schema: deviceRemovedSchema,
    schemaId: 'DeviceRemoved',
    key: installationKey,
    registrySchemas: ['DeviceRemoved'],
    examples: [
      {
        key: '42',
        payload: {
          type: 'device.removed',
          installationId: 42,
          category: 'battery',
          deviceId: 1001,
          occurredAt: '2024-03-01T11:00:00Z',
        },
      },
    ],
  },
];

type AccessType = z.infer<typeof accessEventSchema>['type'];
const accessOption = (type: AccessType): z.ZodType => {
  const option = accessEventSchema.options.find((o) => o.shape.type.value === type);
  if (!option) throw new Error(`no access event ${type}`);
  return option;
};

const access = (
  name: string,
  type: AccessType,
  summary: string,
  key: MessageSpec['key'],
  example: { key: string; payload: Record<string, unknown> },
): MessageSpec => ({
  name,
  title: type,
  summary,
  schema: accessOption(type),
  schemaId: `${name.charAt(0).toUpperCase()}${name.slice(1)}`,
  key,
  examples: [{ key: example.key, payload: { type, occurredAt: at, ...example.payload } }],
});

const appKey = { description: '`app:<applicationId>`', pattern: '^app:[1-9][0-9]*$' };
const keyKey = { description: '`key:<keyId>`', pattern: '^key:.+$' };
const grantKey = {
  description: '`grant:<applicationId>:<installationId>`',
  pattern: '^grant:[1-9][0-9]*:[1-9][0-9]*$',
};
const memberKey = {
  description: '`member:<userId>:<installationId>`',
  pattern: '^member:[1-9][0-9]*:[1-9][0-9]*$',
};
const hash = '3b2c9f6a0d1e4b7c8a5f2e1d0c9b8a7f6e5d4c3b2a190817263544536271809a';

export const ACCESS_MESSAGES: readonly MessageSpec[] = [
  access(
    'applicationUpserted',
    'application.upserted',
    'An application, its owner, enabled or not.',
    appKey,
    {
      key: 'app:17',
      payload: { applicationId: 17, owner: { type: 'user', id: 5 }, enabled: true },
    },
  ),
  access(
    'applicationDeleted',
    'application.deleted',
    'Deletes an application; its keys stop working.',
    appKey,
    {
      key: 'app:17',
      payload: { applicationId: 17 },
    },
  ),
  access(
    'apiKeyCreated',
    'apiKey.created',
    'A key by the SHA-256 of the whole key string; never the key.',
    keyKey,
    {
      key: 'key:k1',
      payload: { keyId: 'k1', applicationId: 17, keyHash: hash, expiresAt: null },
    },
  ),
  access('apiKeyRevoked', 'apiKey.revoked', 'Revokes a key.', keyKey, {
    key: 'key:k1',
    payload: { keyId: 'k1' },
  }),
  access('grantAdded', 'grant.added', 'Grants an application an installation.', grantKey, {
    key: 'grant:17:42',
    payload: { applicationId: 17, installationId: 42 },
  }),
  access('grantRemoved', 'grant.removed', 'Removes a grant.', grantKey, {
    key: 'grant:17:42',
    payload: { applicationId: 17, installationId: 42 },
  }),
  access(
    'membershipAdded',
    'membership.added',
    "A user's direct membership of an installation.",
    memberKey,
    {
      key: 'member:5:42',
      payload: { userId: 5, installationId: 42 },
    },
  ),
  access('membershipRemoved', 'membership.removed', 'Removes a membership.', memberKey, {
    key: 'member:5:42',
    payload: { userId: 5, installationId: 42 },
  }),
  {
    name: 'accessTombstone',
    title: 'tombstone',
    summary: 'A null value removes the fact its key names (app, key, grant or member).',
    schema: null,
    key: { description: 'the key of the fact to remove', pattern: '^(app|key|grant|member):.+$' },
    examples: [{ key: 'grant:17:42', payload: null }],
  },
];

export const DEVICE_MOVES_MESSAGES: readonly MessageSpec[] = [
  {
    name: 'deviceReleased',
    title: 'device.released / device.seen',
    summary:
      "Internal: the device-move protocol between the service's own consumers (docs/projection.md).",
    schema: deviceReleasedSchema,
    schemaId: 'DeviceReleased',
    key: installationKey,
    examples: [
      {
        key: '41',
        payload: {
          type: 'device.released',
          installationId: 41,
          category: 'battery',
          deviceId: 1001,
          atMs: 1709287200000,
          to: 42,
        },
      },
    ],
  },
];

/** A message's payload: its named schema in components.schemas, or a tombstone's null. */
export function payloadOf(spec: MessageSpec): Record<string, unknown> {
  if (spec.schema === null || spec.schemaId === undefined)
    return { $ref: '#/components/schemas/Tombstone' };
  return { $ref: `#/components/schemas/${spec.schemaId}` };
}
