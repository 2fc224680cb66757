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

// An event type's Protobuf schema (.proto, proto3), from its producer JSON Schema: one file per
// event type, its message first (message index 0), nested messages inside it. Field names are
// the JSON names, numbered in the zod schema's order: a new field goes at the end of its object
// (a renumbering is refused by the registry's BACKWARD rule). A nullable or optional scalar is
// `optional` (presence); unset, it is null where the field is required and absent where it is
// optional (docs/events.md, Schema registry). Two JSON shapes have no proto3 scalar: a value of
// several types is a `Scalar` oneof, a nullable boolean in an array a `NullableBool`.

const SCALARS: Readonly<Record<string, string>> = {
  string: 'string',
  integer: 'int64',
  number: 'double',
  boolean: 'bool',
};

export const SCALAR_MESSAGE = 'Scalar';
export const NULLABLE_BOOL_MESSAGE = 'NullableBool';

const pascal = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

interface Context {
  readonly nested: string[];
  needsScalar: boolean;
  needsNullableBool: boolean;
}

function comment(text: string | undefined, indent: string): string {
  return text ? `${indent}// ${text.replace(/\s*\n\s*/g, ' ')}\n` : '';
}

function fieldType(node: JsonSchemaNode, name: string, ctx: Context, indent: string): string {
  const present = nonNull(node);
  const types = nodeTypes(present);
  if (types.length > 1) {
    ctx.needsScalar = true;
    return SCALAR_MESSAGE;
  }
  const [type] = types;
  if (type === 'object') {
    ctx.nested.push(message(present, name, ctx, indent));
    return name;
  }
  const scalar = type === undefined ? undefined : SCALARS[type];
  if (scalar === undefined)
    throw new Error(`no Protobuf type for ${JSON.stringify(node)} (${name})`);
  return scalar;
}

function message(node: JsonSchemaNode, name: string, ctx: Context, indent: string): string {
  const required = new Set(node.required ?? []);
  let body = '';
  let number = 0;
  for (const [field, child] of Object.entries(node.properties ?? {})) {
    number += 1;
    const description = child.description ?? (child.const ? `always "${child.const}"` : undefined);
    body += comment(description, `${indent}  `);
    const present = nonNull(child);
    if (nodeTypes(present)[0] === 'array' && present.items) {
      const items = present.items;
      const nullableScalar = isNullable(items) && nodeTypes(nonNull(items)).length === 1;
      if (nullableScalar) ctx.needsNullableBool = true;
      const type = nullableScalar
        ? NULLABLE_BOOL_MESSAGE
        : fieldType(items, `${name}${pascal(field)}Item`, ctx, indent);
      body += `${indent}  repeated ${type} ${field} = ${number};\n`;
      continue;
    }
    const type = fieldType(child, pascal(field), ctx, '');
    const scalar = Object.values(SCALARS).includes(type);
    const presence = scalar && (!required.has(field) || isNullable(child)) ? 'optional ' : '';
    body += `${indent}  ${presence}${type} ${field} = ${number};\n`;
  }
  return `${indent}message ${name} {\n${body}${indent}}\n`;
}

/** The .proto of one event type. */
export function protoSchema(entry: EventSchemaEntry): string {
  const json = eventJsonSchema(entry);
  const ctx: Context = { nested: [], needsScalar: false, needsNullableBool: false };
  // The top message's own fields first; nested messages are collected, then placed inside it.
  let top = message(json, entry.name, ctx, '');
  if (entry.type === 'device.state') {
    const count = Object.keys(json.properties ?? {}).length;
    top = top.replace(
      /}\n$/,
      `${comment(UNKNOWN_FIELDS_DOC, '  ')}  repeated string ${UNKNOWN_FIELDS} = ${count + 1};\n}\n`,
    );
  }
  const nested = ctx.nested.map((m) => m.replace(/^/gm, '  ').replace(/^ {2}$/gm, ''));
  if (ctx.needsScalar) {
    nested.push(
      '  // A value of one of several JSON types; unset: null.\n' +
        `  message ${SCALAR_MESSAGE} {\n    oneof value {\n      string stringValue = 1;\n` +
        '      double numberValue = 2;\n      bool boolValue = 3;\n    }\n  }\n',
    );
  }
  if (ctx.needsNullableBool) {
    nested.push(
      '  // A boolean or null (unset) in a list.\n' +
        `  message ${NULLABLE_BOOL_MESSAGE} {\n    optional bool value = 1;\n  }\n`,
    );
  }
  const withNested = nested.length ? top.replace(/}\n$/, `${nested.join('')}}\n`) : top;
  const doc = comment(json.description, '');
  return `// Generated from the consumers' zod schemas (infra/export-schemas.ts); do not edit.\nsyntax = "proto3";\n\npackage ${SCHEMA_NAMESPACE};\n\n${doc}${withNested}`;
}
