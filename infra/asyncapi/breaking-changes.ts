import { diff } from '@asyncapi/diff';

// What counts as a breaking change of the topic contract, judged by @asyncapi/diff. Its AsyncAPI 3
// standard classifies channels, operations and messages, but leaves every change inside a
// payload or header schema "unclassified". The overrides below classify those the way a
// receiver's contract reads: what producers could send before must still be accepted. So a
// removed field, a narrowed type, a new required field or a removed enum value break; a new
// optional field, a new enum value or a loosened bound do not. Whatever stays unclassified
// counts as breaking: unknown is not safe.

type Classification = 'breaking' | 'non-breaking' | 'unclassified';
interface Rule {
  add: Classification;
  remove: Classification;
  edit: Classification;
}
const rule = (add: Classification, remove: Classification, edit: Classification): Rule => ({
  add,
  remove,
  edit,
});

const SAFE = rule('non-breaking', 'non-breaking', 'non-breaking');
const BREAKING = rule('breaking', 'breaking', 'breaking');
/** A constraint (minimum, pattern, format…): adding or changing one narrows, removing widens. */
const CONSTRAINT = rule('breaking', 'non-breaking', 'breaking');
/** A list of alternatives (enum, anyOf): a new one widens, a removed one narrows. */
const ALTERNATIVES = rule('non-breaking', 'breaking', 'breaking');

const DOC_KEYWORDS = ['title', 'description', 'examples', 'default', '$comment'];
const CONSTRAINTS = [
  'type',
  'const',
  'format',
  'pattern',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minLength',
  'maxLength',
  'minItems',
  'maxItems',
  'multipleOf',
];

/** Rules for one schema at `at` and every schema below it, as far as `schema` goes. */
function schemaRules(at: string, schema: unknown, rules: Record<string, Rule>): void {
  if (schema === null || typeof schema !== 'object') return;
  const s = schema as Record<string, unknown>;
  for (const k of DOC_KEYWORDS) rules[`${at}/${k}`] = SAFE;
  rules[`${at}/examples/*`] = SAFE;
  for (const k of CONSTRAINTS) rules[`${at}/${k}`] = CONSTRAINT;
  rules[`${at}/type/*`] = ALTERNATIVES;
  rules[`${at}/required`] = CONSTRAINT;
  rules[`${at}/required/*`] = CONSTRAINT;
  for (const k of ['enum', 'anyOf', 'oneOf']) {
    rules[`${at}/${k}`] = ALTERNATIVES;
    rules[`${at}/${k}/*`] = ALTERNATIVES;
  }
  rules[`${at}/properties`] = rule('non-breaking', 'breaking', 'breaking');
  // A new optional property widens (it was ignored before); a removed one is no longer read.
  rules[`${at}/properties/*`] = rule('non-breaking', 'breaking', 'breaking');
  rules[`${at}/additionalProperties`] = CONSTRAINT;
  rules[`${at}/items`] = CONSTRAINT;
  rules[`${at}/allOf`] = CONSTRAINT;
  rules[`${at}/allOf/*`] = CONSTRAINT;
  const children = (key: string) => s[key];
  for (const [name, child] of Object.entries((children('properties') as object) ?? {})) {
    void name;
    schemaRules(`${at}/properties/*`, child, rules);
  }
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    for (const child of (children(key) as unknown[]) ?? [])
      schemaRules(`${at}/${key}/*`, child, rules);
  }
  schemaRules(`${at}/items`, children('items'), rules);
  schemaRules(`${at}/additionalProperties`, children('additionalProperties'), rules);
}

type Doc = Record<string, unknown>;

/** The overrides for the schemas of two documents (paths are patterns: names become `*`). */
export function contractOverrides(...docs: readonly Doc[]): Record<string, Rule> {
  const message = '/channels/*/messages/*';
  const rules: Record<string, Rule> = {
    // The version is ours to judge (below), not a change in itself.
    '/info/version': SAFE,
    '/channels/*/bindings': SAFE,
    '/channels/*/bindings/kafka': SAFE,
    '/channels/*/bindings/kafka/topic': BREAKING,
    '/channels/*/bindings/kafka/partitions': SAFE,
    '/channels/*/bindings/kafka/topicConfiguration': BREAKING,
    [`${message}/bindings`]: SAFE,
    [`${message}/bindings/kafka`]: SAFE,
    [`${message}/bindings/kafka/bindingVersion`]: SAFE,
    // Registry-framed forms beside JSON (registry-schemas.ts): another way in, nothing removed.
    [`${message}/bindings/kafka/schemaIdLocation`]: SAFE,
    [`${message}/bindings/kafka/schemaIdPayloadEncoding`]: SAFE,
    [`${message}/bindings/kafka/schemaLookupStrategy`]: SAFE,
    [`${message}/x-registry-schemas`]: SAFE,
    [`${message}/bindings/kafka/key`]: BREAKING,
    // The consumers' size bound of a value (asyncapi-document.ts): a lower one narrows, and an
    // edit is judged as one. Stating it is no change: every input topic has had it since 2.0.0,
    // the major that brought the limits, before the document stated it.
    [`${message}/x-max-value-bytes`]: rule('non-breaking', 'non-breaking', 'breaking'),
  };
  for (const doc of docs) {
    const channels = (doc.channels ?? {}) as Record<string, { messages?: Record<string, Doc> }>;
    for (const ch of Object.values(channels)) {
      for (const m of Object.values(ch.messages ?? {})) {
        schemaRules(`${message}/payload`, m.payload, rules);
        schemaRules(`${message}/headers`, m.headers, rules);
        schemaRules(`${message}/bindings/kafka/key`, (m.bindings as Doc)?.kafka, rules);
      }
    }
  }
  // The roots keep the standard's judgement (a payload or headers added or removed).
  delete rules[`${message}/payload`];
  delete rules[`${message}/headers`];
  return rules;
}

export interface Change {
  readonly action: string;
  readonly path: string;
  readonly type: string;
}

/**
 * The document with every `#/components/schemas/…` reference replaced by the schema it names
 * (its own keys over the component's), and components.schemas gone: the contract a producer
 * must meet, whatever the layout. So a moved or renamed component is no change, and a change
 * inside one is judged where it applies, under the payloads' rules.
 */
export function inlineSchemaRefs(doc: Doc): Doc {
  const schemas = ((doc.components as Doc | undefined)?.schemas ?? {}) as Record<string, Doc>;
  const prefix = '#/components/schemas/';
  const inline = (node: unknown, seen: readonly string[]): unknown => {
    if (Array.isArray(node)) return node.map((n) => inline(n, seen));
    if (node === null || typeof node !== 'object') return node;
    const { $ref, ...rest } = node as Doc;
    const own = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, inline(v, seen)]));
    if (typeof $ref !== 'string' || !$ref.startsWith(prefix))
      return $ref === undefined ? own : node;
    const id = $ref.slice(prefix.length);
    const target = schemas[id];
    if (target === undefined || seen.includes(id)) return node;
    const { title: _, ...resolved } = inline(target, [...seen, id]) as Doc;
    return { ...resolved, ...own };
  };
  const { components, ...rest } = doc;
  const { schemas: _, ...otherComponents } = (components ?? {}) as Doc;
  const out = inline(rest, []) as Doc;
  return Object.keys(otherComponents).length ? { ...out, components: otherComponents } : out;
}

/**
 * The document without its messages' examples: they illustrate, they bind no one, and
 * @asyncapi/diff leaves every change inside one (a field of an example payload) unclassified.
 */
function withoutMessageExamples(doc: Doc): Doc {
  const channels = (doc.channels ?? {}) as Record<string, Doc>;
  const strip = (messages: Record<string, Doc>) =>
    Object.fromEntries(
      Object.entries(messages).map(([id, { examples: _, ...m }]) => [id, m] as const),
    );
  return {
    ...doc,
    channels: Object.fromEntries(
      Object.entries(channels).map(([id, ch]) => [
        id,
        ch.messages ? { ...ch, messages: strip(ch.messages as Record<string, Doc>) } : ch,
      ]),
    ),
  };
}

/** The changes from `before` to `after` that break producers: breaking or unclassified. */
export function breakingChanges(beforeDoc: Doc, afterDoc: Doc): readonly Change[] {
  const before = withoutMessageExamples(inlineSchemaRefs(beforeDoc));
  const after = withoutMessageExamples(inlineSchemaRefs(afterDoc));
  const output = diff(before, after, { override: contractOverrides(before, after) });
  return [...output.breaking(), ...output.unclassified()] as Change[];
}

export const majorOf = (doc: Doc): number =>
  Number(String((doc.info as Doc | undefined)?.version ?? '0').split('.')[0]);
