import { avroSchema } from './avro-schema.js';
import { EVENT_SCHEMAS, type EventSchemaEntry, eventJsonSchema } from './event-schemas.js';
import { protoSchema } from './proto-schema.js';

// The files of docs/schemas/registry/: each event type's schema in the three registry formats,
// as registered (tools/register-schemas.ts) and as a unit test holds them to the code.

export const REGISTRY_SCHEMA_DIR = 'docs/schemas/registry';

/** The registry's name of each format (`schemaType`). */
export const SCHEMA_TYPES = { avro: 'AVRO', protobuf: 'PROTOBUF', 'json-schema': 'JSON' } as const;
export type SchemaFormat = keyof typeof SCHEMA_TYPES;

export interface SchemaFile {
  readonly entry: EventSchemaEntry;
  readonly format: SchemaFormat;
  /** Relative to REGISTRY_SCHEMA_DIR. */
  readonly path: string;
  /** The schema text, as registered. */
  readonly text: string;
}

export function registrySchemaFiles(): SchemaFile[] {
  return EVENT_SCHEMAS.flatMap((entry): SchemaFile[] => [
    {
      entry,
      format: 'avro',
      path: `avro/${entry.name}.avsc`,
      text: `${JSON.stringify(avroSchema(entry), null, 2)}\n`,
    },
    { entry, format: 'protobuf', path: `protobuf/${entry.name}.proto`, text: protoSchema(entry) },
    {
      entry,
      format: 'json-schema',
      path: `json-schema/${entry.name}.schema.json`,
      text: `${JSON.stringify(eventJsonSchema(entry), null, 2)}\n`,
    },
  ]);
}
