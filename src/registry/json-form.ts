import {
  entryFor,
  eventJsonSchema,
  isNullable,
  type JsonSchemaNode,
  nodeTypes,
  nonNull,
  UNKNOWN_FIELDS,
} from './event-schemas.js';

// A value decoded from Avro or Protobuf, turned into the JSON form of the same event, which the
// consumers then validate and fold exactly as a JSON producer's (docs/events.md, Schema
// registry). Driven by the event's JSON Schema (from the zod schemas): a null (Avro) or unset
// (Protobuf) field is null where the field is required and absent where it is optional, and
// `unknownFields` names the state fields set unknown. Fields the writer's schema has and ours
// does not (a newer writer) are kept as they are: the consumers drop and count them as they do
// a JSON producer's unknown keys.

export type DecodedFormat = 'AVRO' | 'PROTOBUF';

const SCHEMAS = new Map<string, JsonSchemaNode>();
function schemaOf(type: unknown, category: unknown): JsonSchemaNode | undefined {
  const entry = entryFor(type, category);
  if (entry === undefined) return undefined;
  let schema = SCHEMAS.get(entry.name);
  if (schema === undefined) {
    schema = eventJsonSchema(entry);
    SCHEMAS.set(entry.name, schema);
  }
  return schema;
}

const PROTO_DEFAULTS: Readonly<Record<string, unknown>> = {
  string: '',
  integer: 0,
  number: 0,
  boolean: false,
};

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The JSON form of a decoded event; a value of no known event type is passed on as it is. */
export function toJsonForm(decoded: Obj, format: DecodedFormat): Obj {
  const schema = schemaOf(decoded.type, decoded.category);
  if (schema === undefined) return decoded;
  const out = objectForm(decoded, schema, format);
  const unknown = decoded[UNKNOWN_FIELDS];
  delete out[UNKNOWN_FIELDS];
  if (Array.isArray(unknown) && unknown.length > 0 && isObject(out.state)) {
    for (const name of unknown) if (typeof name === 'string') out.state[name] = null;
  }
  return out;
}

function objectForm(value: Obj, node: JsonSchemaNode, format: DecodedFormat): Obj {
  const properties = node.properties ?? {};
  const required = node.required ?? [];
  const out: Obj = {};
  // Own keys only: Avro's decoded records are instances of generated classes.
  for (const key of Object.keys(value)) {
    const v = value[key];
    if (v === null || v === undefined) continue;
    const child = properties[key];
    out[key] = child === undefined ? v : valueForm(v, child, format);
  }
  // Required fields the decoder left unset: null where null is allowed; Protobuf's default
  // (proto3 does not write a field holding it) where it is not; else missing, for zod to say so.
  for (const key of required) {
    if (key in out) continue;
    const child = properties[key];
    if (child === undefined) continue;
    if (isNullable(child)) out[key] = null;
    else if (format === 'PROTOBUF') {
      const [type] = nodeTypes(child);
      if (type !== undefined && type in PROTO_DEFAULTS) out[key] = PROTO_DEFAULTS[type];
      else if (type === 'array') out[key] = [];
    }
  }
  return out;
}

function valueForm(v: unknown, node: JsonSchemaNode, format: DecodedFormat): unknown {
  const present = nonNull(node);
  const types = nodeTypes(present);
  if (types.length > 1) return format === 'PROTOBUF' && isObject(v) ? scalarOf(v) : v;
  const [type] = types;
  if (type === 'object' && isObject(v)) return objectForm(v, present, format);
  if (type === 'array' && Array.isArray(v) && present.items) {
    const items = present.items;
    if (format === 'PROTOBUF' && isNullable(items) && nodeTypes(nonNull(items)).length === 1) {
      return v.map((e) => (isObject(e) ? (e.value ?? null) : e));
    }
    return v.map((e) => valueForm(e, items, format));
  }
  return v;
}

/** A Protobuf `Scalar` (one of several JSON types): its one set value, or null. */
function scalarOf(v: Obj): unknown {
  return v.stringValue ?? v.numberValue ?? v.boolValue ?? null;
}
