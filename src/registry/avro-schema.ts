import {
  type EventSchemaEntry,
  eventJsonSchema,
  isNullable,
  type JsonSchemaNode,
  nodeTypes,
  nonNull,
  SCHEMA_NAMESPACE,
  UNKNOWN_FIELDS,
  UNKNOWN_FIELDS_DOC,
} from './event-schemas.js';

// An event type's Avro schema (.avsc), from its producer JSON Schema. Ids are `long`, numbers
// `double`, constants and enums `string` (an Avro enum cannot hold `installation.upserted`, and
// a string keeps new values compatible); the consumers' zod schemas check the values after
// decoding. A nullable field is `["null", T]`; an optional one also defaults to null, which the
// consumers read as absent (docs/events.md, Schema registry).

type AvroType = string | readonly AvroType[] | { readonly [k: string]: unknown };

interface AvroField {
  name: string;
  type: AvroType;
  doc?: string;
  default?: unknown;
}

const SCALARS: Readonly<Record<string, string>> = {
  string: 'string',
  integer: 'long',
  number: 'double',
  boolean: 'boolean',
};

const pascal = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

function avroType(node: JsonSchemaNode, name: string): AvroType {
  const present = nonNull(node);
  const types = nodeTypes(present);
  if (types.length > 1) return types.map((t) => avroType({ type: t }, name));
  const [type] = types;
  if (type === 'object') return record(present, name);
  if (type === 'array' && present.items) {
    return { type: 'array', items: withNull(present.items, avroType(present.items, name)) };
  }
  const scalar = type === undefined ? undefined : SCALARS[type];
  if (scalar === undefined) throw new Error(`no Avro type for ${JSON.stringify(node)} (${name})`);
  return scalar;
}

const withNull = (node: JsonSchemaNode, type: AvroType): AvroType =>
  isNullable(node) ? ['null', ...(Array.isArray(type) ? type : [type])] : type;

function record(node: JsonSchemaNode, name: string, doc?: string): Record<string, unknown> {
  const required = new Set(node.required ?? []);
  const fields: AvroField[] = Object.entries(node.properties ?? {}).map(([field, child]) => {
    const type = avroType(child, `${name}${pascal(field)}`);
    const optional = !required.has(field);
    const f: AvroField = {
      name: field,
      type: optional || isNullable(child) ? withNull({ type: 'null' }, type) : type,
    };
    const description = child.description ?? (child.const ? `always "${child.const}"` : undefined);
    if (description) f.doc = description;
    if (optional) f.default = null;
    return f;
  });
  return { type: 'record', name, ...(doc ? { doc } : {}), fields };
}

/** The .avsc of one event type. */
export function avroSchema(entry: EventSchemaEntry): Record<string, unknown> {
  const json = eventJsonSchema(entry);
  const top = record(json, entry.name, json.description);
  if (entry.type === 'device.state') {
    (top.fields as AvroField[]).push({
      name: UNKNOWN_FIELDS,
      type: { type: 'array', items: 'string' },
      doc: UNKNOWN_FIELDS_DOC,
      default: [],
    });
  }
  return { ...top, namespace: SCHEMA_NAMESPACE };
}
