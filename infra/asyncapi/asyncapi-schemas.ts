import { z } from 'zod';
import { deadLetterCoordinatesSchema, replayRecordSchema } from '../../src/domain/dead-letter.js';
import {
  DEVICE_CATEGORIES,
  deviceCategorySchema,
  passThroughValueSchema,
} from '../../src/domain/device-fields.js';
import {
  applicationOwnerSchema,
  DEVICE_STATE_SCHEMAS,
  ownerTypeSchema,
  STATE_SCHEMAS,
} from '../../src/domain/events.js';
import { installationSchema, installationTypeSchema } from '../../src/domain/installation.js';
import { contractJsonSchema } from '../../src/domain/json-schema.js';
import { deviceMoveTypeSchema } from '../../src/projection/device-released.js';
import {
  ACCESS_MESSAGES,
  DEVICE_MOVES_MESSAGES,
  INSTALLATIONS_MESSAGES,
  TELEMETRY_MESSAGES,
} from './asyncapi-messages.js';

// components.schemas of docs/asyncapi.json: every payload and every object inside one named,
// so that generators (Modelina) make a named model of each, never an AnonymousSchema_N.
// Draft-07 (AsyncAPI's default schema format), as producers send it (zod's input side).

type Json = Record<string, unknown>;

/** A domain schema's id here is the title it carries everywhere (docs/schemas too). */
function titled(schema: z.ZodType): { id: string } {
  const title = z.globalRegistry.get(schema)?.title;
  if (title === undefined) throw new Error('a named domain schema has no title');
  return { id: title };
}

export function asyncApiSchemas(): Record<string, Json> {
  const registry = z.registry<{ id: string }>();
  registry.add(installationSchema, titled(installationSchema));
  registry.add(installationTypeSchema, { id: 'InstallationType' });
  registry.add(applicationOwnerSchema, titled(applicationOwnerSchema));
  registry.add(ownerTypeSchema, { id: 'OwnerType' });
  registry.add(deviceCategorySchema, { id: 'DeviceCategory' });
  registry.add(deviceMoveTypeSchema, { id: 'DeviceMoveType' });
  registry.add(passThroughValueSchema, { id: 'PassThroughValue' });
  for (const c of DEVICE_CATEGORIES) {
    registry.add(STATE_SCHEMAS[c], titled(STATE_SCHEMAS[c]));
    registry.add(DEVICE_STATE_SCHEMAS[c], titled(DEVICE_STATE_SCHEMAS[c]));
  }
  const messages = [
    ...INSTALLATIONS_MESSAGES,
    ...TELEMETRY_MESSAGES,
    ...ACCESS_MESSAGES,
    ...DEVICE_MOVES_MESSAGES,
  ];
  for (const m of messages) {
    if (m.schema === null || m.schemaId === undefined) continue;
    // An event's schema carries its name (docs/schemas shows it): the message must agree.
    const title = z.globalRegistry.get(m.schema)?.title;
    if (title !== undefined && title !== m.schemaId)
      throw new Error(`message ${m.name}: schema ${m.schemaId} is titled ${title}`);
    registry.add(m.schema, { id: m.schemaId });
  }
  registry.add(replayRecordSchema, { id: 'ReplayRecord' });
  registry.add(deadLetterCoordinatesSchema, { id: 'MessageCoordinates' });
  const { schemas } = contractJsonSchema(registry, {
    target: 'draft-07',
    io: 'input',
    uri: (id) => `#/components/schemas/${id}`,
  });
  for (const [id, schema] of Object.entries(schemas)) {
    delete schema.$schema;
    delete schema.$id;
    schema.title = id;
    refsWithSiblings(schema);
  }
  // The union's discriminator (AsyncAPI's Schema Object has one; zod does not write it): a
  // generator then tells the six events apart by `category`, as the consumers do.
  // oneOf, not zod's anyOf: exactly one matches (category is a const in each), and Modelina
  // reads a discriminator on a oneOf only.
  const deviceState = schemas.DeviceStateEvent;
  if (deviceState) {
    deviceState.oneOf = deviceState.anyOf;
    delete deviceState.anyOf;
    deviceState.discriminator = 'category';
  }
  return {
    ...schemas,
    Tombstone: {
      title: 'Tombstone',
      type: 'null',
      description: 'A Kafka tombstone: no value; what it removes is named by the message key.',
    },
    DeadLetterValue: {
      title: 'DeadLetterValue',
      description:
        'The original value bytes, as sent to the source topic; absent (null) for too_large, undecodable_batch and tombstones.',
    },
  };
}

/**
 * zod writes a described reference as `{ description, allOf: [{ $ref }] }` for draft-07; the
 * AsyncAPI parser keeps a schema's component name only on a plain `$ref`, and Modelina names a
 * model after it: `{ $ref, description }` (the description for readers, the reference for tools).
 */
function refsWithSiblings(node: unknown): void {
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const n of node) refsWithSiblings(n);
    return;
  }
  const s = node as Json;
  const allOf = s.allOf;
  if (
    Array.isArray(allOf) &&
    allOf.length === 1 &&
    Object.keys(allOf[0] as Json).join() === '$ref'
  ) {
    delete s.allOf;
    s.$ref = (allOf[0] as Json).$ref;
  }
  for (const v of Object.values(s)) refsWithSiblings(v);
}
