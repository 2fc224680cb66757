// Walks the JSON Schemas of a contract document (OpenAPI, AsyncAPI, docs/schemas): every
// property of every object schema, wherever it is, with its path.

type Json = Record<string, unknown>;

export interface PropertyAt {
  readonly path: string;
  readonly name: string;
  readonly schema: Json;
}

export function propertiesOf(doc: unknown): PropertyAt[] {
  const out: PropertyAt[] = [];
  const walk = (node: unknown, path: string): void => {
    if (Array.isArray(node)) {
      for (const [i, n] of node.entries()) walk(n, `${path}/${i}`);
      return;
    }
    if (node === null || typeof node !== 'object') return;
    const s = node as Json;
    const properties = s.properties;
    // `properties` of an object schema, not a property that happens to be named so.
    if (properties && typeof properties === 'object' && !path.endsWith('/properties')) {
      for (const [name, schema] of Object.entries(properties as Json))
        out.push({ path: `${path}/properties/${name}`, name, schema: schema as Json });
    }
    for (const [k, v] of Object.entries(s)) walk(v, `${path}/${k}`);
  };
  walk(doc, '');
  return out;
}

/** Properties without a description of their own. */
export const undescribed = (doc: unknown): string[] =>
  propertiesOf(doc)
    .filter((p) => typeof p.schema.description !== 'string' || p.schema.description.trim() === '')
    .map((p) => p.path);

/** The JSON Schema types a property allows (`type`, or each branch of anyOf). */
export function typesOf(schema: Json): string[] {
  const t = schema.type;
  if (typeof t === 'string') return [t];
  if (Array.isArray(t)) return t as string[];
  const anyOf = schema.anyOf;
  return Array.isArray(anyOf) ? anyOf.flatMap((b) => typesOf(b as Json)) : [];
}
