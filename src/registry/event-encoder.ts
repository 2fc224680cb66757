import avro from 'avsc';
import protobuf from 'protobufjs';
import { avroSchema } from './avro-schema.js';
import {
  type EventSchemaEntry,
  entryFor,
  eventJsonSchema,
  isNullable,
  type JsonSchemaNode,
  nodeTypes,
  nonNull,
  SCHEMA_NAMESPACE,
  UNKNOWN_FIELDS,
} from './event-schemas.js';
import { protoSchema } from './proto-schema.js';
import { frame } from './wire-format.js';

// The producer side of json-form.ts: an event's JSON form written in one of the registry
// formats with the service's own schemas, framed with the schema id the registry gave it. The
// simulator, the tests and the bench produce with it; a platform team uses its own serializer
// (Java's, @kafkajs/confluent-schema-registry), which writes the same bytes.

export const REGISTRY_FORMATS = ['avro', 'protobuf', 'json-schema'] as const;
export type RegistryFormat = (typeof REGISTRY_FORMATS)[number];

type Obj = Record<string, unknown>;
const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

interface CompiledEntry {
  readonly entry: EventSchemaEntry;
  readonly json: JsonSchemaNode;
  readonly avro: avro.Type;
  readonly proto: protobuf.Type;
}

const COMPILED = new Map<string, CompiledEntry>();
function compiled(entry: EventSchemaEntry): CompiledEntry {
  let c = COMPILED.get(entry.name);
  if (c === undefined) {
    const root = protobuf.parse(protoSchema(entry), { keepCase: true }).root;
    c = {
      entry,
      json: eventJsonSchema(entry),
      avro: avro.Type.forSchema(avroSchema(entry) as avro.Schema),
      proto: root.lookupType(`${SCHEMA_NAMESPACE}.${entry.name}`),
    };
    COMPILED.set(entry.name, c);
  }
  return c;
}

/** The schema entry of an event's JSON form; throws for a type no schema covers. */
export function schemaEntryOf(event: Obj): EventSchemaEntry {
  const entry = entryFor(event.type, event.category);
  if (entry === undefined) throw new Error(`no registry schema for ${String(event.type)}`);
  return entry;
}

/** The payload of one event (no header): Avro binary, Protobuf (no indexes) or JSON. */
export function encodePayload(event: Obj, format: RegistryFormat): Uint8Array {
  if (format === 'json-schema') return Buffer.from(JSON.stringify(event));
  const c = compiled(schemaEntryOf(event));
  const form = registryForm(event, c.json, format);
  if (format === 'avro') return c.avro.toBuffer(form);
  return c.proto.encode(c.proto.fromObject(form)).finish();
}

/** The framed value: header with `schemaId`, for Protobuf the message index [0], the payload. */
export function encodeEvent(event: Obj, format: RegistryFormat, schemaId: number): Buffer {
  return frame(schemaId, encodePayload(event, format), format === 'protobuf' ? [0] : undefined);
}

/** An event's JSON form in the shape its Avro or Protobuf schema takes (e.g. for another serializer). */
export function toRegistryForm(event: Obj, format: RegistryFormat): Obj {
  if (format === 'json-schema') return event;
  return registryForm(event, compiled(schemaEntryOf(event)).json, format);
}

/** The JSON form in the shape the Avro / Protobuf schemas take (json-form.ts reads it back). */
function registryForm(event: Obj, json: JsonSchemaNode, format: RegistryFormat): Obj {
  const out = objectForm(event, json, format, true);
  if (event.type === 'device.state' && isObject(event.state)) {
    out[UNKNOWN_FIELDS] = Object.keys(event.state).filter(
      (k) => event.state && (event.state as Obj)[k] === null,
    );
  }
  return out;
}

function objectForm(value: Obj, node: JsonSchemaNode, format: RegistryFormat, all: boolean): Obj {
  const out: Obj = {};
  for (const [key, child] of Object.entries(node.properties ?? {})) {
    const v = value[key];
    // Avro writes every field: an absent or null one as null.
    if (v === undefined || v === null) {
      if (format === 'avro' && all) out[key] = null;
      continue;
    }
    out[key] = valueForm(v, child, format);
  }
  return out;
}

function valueForm(v: unknown, node: JsonSchemaNode, format: RegistryFormat): unknown {
  const present = nonNull(node);
  const types = nodeTypes(present);
  if (types.length > 1) {
    if (format !== 'protobuf') return v;
    if (typeof v === 'string') return { stringValue: v };
    if (typeof v === 'number') return { numberValue: v };
    if (typeof v === 'boolean') return { boolValue: v };
    return {};
  }
  const [type] = types;
  if (type === 'object' && isObject(v)) return objectForm(v, present, format, true);
  if (type === 'array' && Array.isArray(v) && present.items) {
    const items = present.items;
    if (format === 'protobuf' && isNullable(items) && nodeTypes(nonNull(items)).length === 1) {
      return v.map((e) => (e === null ? {} : { value: e }));
    }
    return v.map((e) => valueForm(e, items, format));
  }
  return v;
}
