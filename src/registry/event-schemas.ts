import type { z } from 'zod';
import { DEVICE_CATEGORIES, type DeviceCategory } from '../domain/device-fields.js';
import {
  DEVICE_STATE_SCHEMAS,
  deviceRemovedSchema,
  installationDeletedSchema,
  installationUpsertedSchema,
  producerJsonSchema,
} from '../domain/events.js';

// The event types a producer may send in a schema registry's wire format, each with the names
// its schemas carry. Their Avro, Protobuf and JSON Schema forms are generated from the zod
// schemas the consumers validate with (docs/schemas/registry/, infra/export-schemas.ts), so a
// field's type and description have one source.

/** The topics whose values may be registry-framed; access-changes.v1 stays JSON (events.md). */
export type FramedTopic = 'installations.v1' | 'device-telemetry.v1';

export interface EventSchemaEntry {
  /** The record / message name: `InstallationUpserted`, `BatteryState`, ... */
  readonly name: string;
  readonly topic: FramedTopic;
  /** The event's `type`, and for device.state its `category`. */
  readonly type: string;
  readonly category?: DeviceCategory;
  readonly zod: z.ZodType;
}

/** Avro namespace and Protobuf package of every schema. */
export const SCHEMA_NAMESPACE = 'readmodel.v1';

const pascal = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

export const EVENT_SCHEMAS: readonly EventSchemaEntry[] = [
  {
    name: 'InstallationUpserted',
    topic: 'installations.v1',
    type: 'installation.upserted',
    zod: installationUpsertedSchema,
  },
  {
    name: 'InstallationDeleted',
    topic: 'installations.v1',
    type: 'installation.deleted',
    zod: installationDeletedSchema,
  },
  ...DEVICE_CATEGORIES.map(
    (category): EventSchemaEntry => ({
      name: `${pascal(category)}State`,
      topic: 'device-telemetry.v1',
      type: 'device.state',
      category,
      zod: DEVICE_STATE_SCHEMAS[category],
    }),
  ),
  {
    name: 'DeviceRemoved',
    topic: 'device-telemetry.v1',
    type: 'device.removed',
    zod: deviceRemovedSchema,
  },
];

/**
 * The registry subject of an event type's schema on a topic: Confluent's
 * TopicRecordNameStrategy (`<topic>-<record full name>`), one subject per event type, since a
 * topic carries several.
 */
export const subjectName = (topic: string, entry: EventSchemaEntry): string =>
  `${topic}-${SCHEMA_NAMESPACE}.${entry.name}`;

/** A JSON Schema node, as z.toJSONSchema writes them. */
export interface JsonSchemaNode {
  readonly type?: string | readonly string[];
  readonly const?: unknown;
  readonly enum?: readonly unknown[];
  readonly anyOf?: readonly JsonSchemaNode[];
  readonly properties?: Readonly<Record<string, JsonSchemaNode>>;
  readonly required?: readonly string[];
  readonly items?: JsonSchemaNode;
  readonly description?: string;
  readonly title?: string;
  readonly [k: string]: unknown;
}

/** The event's producer JSON Schema (draft 2020-12), titled with its record name. */
export function eventJsonSchema(entry: EventSchemaEntry): JsonSchemaNode {
  return producerJsonSchema(entry.zod, `${SCHEMA_NAMESPACE}.${entry.name}`) as JsonSchemaNode;
}

/** The entry for a decoded value's `type` (and `category`), or undefined. */
export function entryFor(type: unknown, category: unknown): EventSchemaEntry | undefined {
  return EVENT_SCHEMAS.find(
    (e) => e.type === type && (e.category === undefined || e.category === category),
  );
}

/**
 * The Avro and Protobuf forms have no "absent" beside null for a `state` field: a null (Avro) or
 * unset (Protobuf) field is absent and keeps its last-known value, and this list names the
 * fields the event sets unknown (JSON's explicit null). JSON Schema-framed values are JSON.
 */
export const UNKNOWN_FIELDS = 'unknownFields';
export const UNKNOWN_FIELDS_DOC =
  'state fields this event sets unknown (null); a state field left null or unset is absent and keeps its last-known value';

/** The types a node allows, null included: `{type: [a, null]}` and `anyOf` alike. */
export function nodeTypes(node: JsonSchemaNode): string[] {
  if (node.anyOf) return node.anyOf.flatMap(nodeTypes);
  if (Array.isArray(node.type)) return [...node.type];
  if (typeof node.type === 'string') return [node.type];
  return [];
}

/** The node without its null alternative (what a present value is). */
export function nonNull(node: JsonSchemaNode): JsonSchemaNode {
  if (node.anyOf) {
    const rest = node.anyOf.filter((n) => !(n.type === 'null'));
    const [only] = rest;
    return rest.length === 1 && only ? { ...only, description: node.description } : node;
  }
  if (Array.isArray(node.type)) {
    const rest = node.type.filter((t) => t !== 'null');
    return rest.length === 1 ? { ...node, type: rest[0] } : { ...node, type: rest };
  }
  return node;
}

export const isNullable = (node: JsonSchemaNode): boolean => nodeTypes(node).includes('null');
