import { z } from 'zod';

// The one way the contracts turn zod schemas into JSON Schema: docs/schemas, docs/asyncapi.json
// and docs/openapi.json's components.

type Json = Record<string, unknown>;
export type JsonSchemaTarget = 'draft-2020-12' | 'draft-07';

/**
 * `anyOf: [{ type: T, … }, { type: 'null' }]` becomes `{ type: [T, 'null'], … }`: the same
 * values, in the form code generators type as a nullable T (a Java `Long`, a TypeScript
 * `number | null`) instead of a union model of its own.
 */
function collapseNullable(schema: Json): void {
  const anyOf = schema.anyOf;
  if (!Array.isArray(anyOf) || anyOf.length !== 2) return;
  const nullIndex = anyOf.findIndex((s: Json) => s.type === 'null' && Object.keys(s).length === 1);
  const other = anyOf[1 - nullIndex] as Json | undefined;
  if (nullIndex < 0 || !other || typeof other.type !== 'string' || '$ref' in other) return;
  delete schema.anyOf;
  const { type, ...rest } = other;
  // The outer keys (description, title) stay on top of the inner ones.
  for (const [k, v] of Object.entries(rest)) if (!(k in schema)) schema[k] = v;
  schema.type = [type, 'null'];
}

/**
 * The other way for an array's items, which zod itself writes as `{ type: [T, 'null'] }`:
 * Modelina types that as `T | null[]`, the anyOf as `(T | null)[]`.
 */
function nullableItemsAsAnyOf(node: unknown): void {
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const n of node) nullableItemsAsAnyOf(n);
    return;
  }
  const items = (node as Json).items as Json | undefined;
  const type = items?.type;
  if (items && Array.isArray(type) && type.length === 2 && type.includes('null')) {
    delete items.type;
    items.anyOf = [{ type: type.find((t) => t !== 'null') }, { type: 'null' }];
  }
  for (const v of Object.values(node)) nullableItemsAsAnyOf(v);
}

export interface ContractSchemaOptions {
  readonly target: JsonSchemaTarget;
  readonly io: 'input' | 'output';
  /** Registry mode: where a named schema is referenced from. */
  readonly uri?: (id: string) => string;
}

export function contractJsonSchema(schema: z.ZodType, options: ContractSchemaOptions): Json;
export function contractJsonSchema(
  registry: z.core.$ZodRegistry<{ id?: string }>,
  options: ContractSchemaOptions,
): { schemas: Record<string, Json> };
export function contractJsonSchema(
  input: z.ZodType | z.core.$ZodRegistry<{ id?: string }>,
  options: ContractSchemaOptions,
): unknown {
  const params = {
    target: options.target,
    io: options.io,
    ...(options.uri ? { uri: options.uri } : {}),
    // Not an array's items: Modelina types `items: { type: [boolean, null] }` as
    // `boolean | null[]`, the anyOf as `(boolean | null)[]`.
    override: (ctx: { jsonSchema: Json }) => collapseNullable(ctx.jsonSchema),
  };
  // biome-ignore lint/suspicious/noExplicitAny: zod's overloads take a schema or a registry
  const out = z.toJSONSchema(input as any, params as any);
  nullableItemsAsAnyOf(out);
  return out;
}
