import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { propertiesOf, typesOf, undescribed } from '../support/schema-walk.js';

// issue 54: the committed contracts carry the domain. Every property of every public shape has a
// description (unit, sign, range, what null means: src/domain/device-field-meanings.ts and the
// zod schemas), every id is typed for generators as 64-bit, every schema is named. That each
// committed file is what the code generates is asserted beside each generator
// (api-openapi, asyncapi-document, event-json-schema tests).

// biome-ignore lint/suspicious/noExplicitAny: walking JSON documents
type Doc = Record<string, any>;
const read = (path: string): Doc =>
  JSON.parse(readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8'));
const openapi = read('docs/openapi.json');
const asyncapi = read('docs/asyncapi.json');
const jsonFilesIn = (dir: string) =>
  readdirSync(new URL(`../../${dir}`, import.meta.url))
    .filter((f) => f.endsWith('.json'))
    .map((f) => `${dir}${f}`);
const schemaFiles = jsonFilesIn('docs/schemas/');
// One per event type, registered in the schema registry: described as the topics' schemas are.
const registryFiles = jsonFilesIn('docs/schemas/registry/json-schema/');
const documents: Record<string, Doc> = {
  'docs/openapi.json': openapi,
  'docs/asyncapi.json': asyncapi,
  ...Object.fromEntries([...schemaFiles, ...registryFiles].map((f) => [f, read(f)])),
};

/** Every object schema (one with properties) in a document, with its path. */
function objectSchemasOf(doc: unknown): { path: string; schema: Doc }[] {
  const out: { path: string; schema: Doc }[] = [];
  const walk = (node: unknown, path: string): void => {
    if (node === null || typeof node !== 'object') return;
    const s = node as Doc;
    if (!Array.isArray(s) && s.properties && !path.endsWith('/properties'))
      out.push({ path, schema: s });
    for (const [k, v] of Object.entries(s)) walk(v, `${path}/${k}`);
  };
  walk(doc, '');
  return out;
}

const isId = (name: string) => name === 'id' || /[a-z]Id$/.test(name);

describe('the contracts carry the domain', () => {
  it('describe every property of every schema, in every document', () => {
    for (const [file, doc] of Object.entries(documents)) {
      expect(propertiesOf(doc).length, file).toBeGreaterThan(file.includes('/registry/') ? 2 : 10);
      expect(undescribed(doc), file).toEqual([]);
    }
  });

  it('give every integer id format int64 and the bounds of the safe range', () => {
    for (const [file, doc] of Object.entries(documents)) {
      for (const { path, name, schema } of propertiesOf(doc)) {
        if (!isId(name) || !typesOf(schema).includes('integer')) continue;
        expect(schema.format, `${file} ${path}`).toBe('int64');
        expect(schema.maximum, `${file} ${path}`).toBe(Number.MAX_SAFE_INTEGER);
      }
    }
  });

  it('bound every string a producer sends (docs/events.md Limits)', () => {
    for (const file of ['docs/asyncapi.json', ...schemaFiles]) {
      const doc = documents[file] as Doc;
      // AsyncAPI: the payloads (components), not the headers the dead-letter tool sets.
      const strings = propertiesOf(doc.components?.schemas ?? doc).flatMap(({ path, schema }) =>
        [schema, ...((schema.anyOf as Doc[] | undefined) ?? [])]
          .filter((s) => typesOf(s).includes('string') && !s.anyOf && !s.enum && !s.const)
          .map((s) => ({ path, schema: s })),
      );
      for (const { path, schema } of strings) {
        // A pattern bounds the length only without an open quantifier (a hash's `{64}`); a
        // date-time's `(?:\.\d+)?` does not, so it needs its maxLength.
        if (schema.pattern && !/[*+]|\{\d+,\}/.test(schema.pattern)) continue;
        expect(
          typeof schema.maxLength === 'number' && schema.maxLength > 0,
          `${file} ${path}`,
        ).toBe(true);
      }
    }
  });

  it('state the ranges read-api.md gives: soe, soh, minSoe, maxSoe 0-100 as served', () => {
    const battery = openapi.components.schemas.Battery.properties;
    for (const name of ['soe', 'soh', 'minSoe', 'maxSoe']) {
      expect([battery[name].minimum, battery[name].maximum], name).toEqual([0, 100]);
    }
    const flow = openapi.components.schemas.EnergyFlowData.properties;
    expect([flow.batterySoe.minimum, flow.batterySoe.maximum]).toEqual([0, 100]);
  });

  it('state the ranges the texts give: positive ids, unsigned magnitudes, housePower >= 0', () => {
    const schemas = openapi.components.schemas as Record<string, Doc>;
    const devices = ['Inverter', 'Battery', 'EnergyMeter', 'EvCharger', 'Relay', 'Boiler'];
    const bounds = (p: Doc) => [p.minimum, p.maximum];
    for (const c of devices) {
      const fields = schemas[c]?.properties as Record<string, Doc>;
      for (const name of ['id', 'installationId', 'gatewayId', 'inverterId']) {
        if (!fields[name]) continue;
        expect(bounds(fields[name]), `${c}.${name}`).toEqual([1, Number.MAX_SAFE_INTEGER]);
        expect(fields[name].description).not.toMatch(/negative/);
      }
      for (const [name, field] of Object.entries(fields)) {
        if (!/magnitude without sign/.test(field.description)) continue;
        expect(field.minimum, `${c}.${name}`).toBe(0);
      }
    }
    // The four fields read-api.md calls magnitudes without sign.
    const unsigned = (doc: Doc) =>
      propertiesOf(doc)
        .filter(({ schema }) => /magnitude without sign/.test(String(schema.description)))
        .map(({ name }) => name);
    expect(new Set(unsigned(openapi))).toEqual(
      new Set([
        'maxChargePower',
        'maxDischargePower',
        'maxChargeContinuousPower',
        'maxDischargeContinuousPower',
      ]),
    );
    // Sent: any value of the type, an out-of-range one is stored as null, as the text says.
    for (const { name, schema } of propertiesOf(asyncapi.components.schemas)) {
      if (['gatewayId', 'inverterId'].includes(name))
        expect(schema.description, name).toMatch(/Sent below 1, it is stored as null/);
      if (/magnitude without sign/.test(String(schema.description)))
        expect(schema.description, name).toMatch(/Sent negative, it is stored as null/);
    }
    const house = schemas.EnergyFlowData?.properties.housePower;
    expect(house.description).toMatch(/floored at 0/);
    expect(house.minimum).toBe(0);
  });

  it('name every schema: titled components, no inline object inside another', () => {
    for (const file of ['docs/openapi.json', 'docs/asyncapi.json']) {
      const schemas = documents[file]?.components.schemas as Record<string, Doc>;
      for (const [id, schema] of Object.entries(schemas)) {
        expect(schema.title, `${file} ${id}`).toBe(id);
        expect(typeof schema.description === 'string' || schema.type === 'string', id).toBe(true);
        // A nested object or enum is a $ref to a component of its own, never inline.
        for (const { path, schema: p } of propertiesOf(schema)) {
          const branches: Doc[] = [p, ...((p.anyOf as Doc[] | undefined) ?? []), p.items ?? {}];
          for (const b of branches) {
            expect(b.properties === undefined, `${file} ${id}${path}: inline object`).toBe(true);
          }
        }
      }
    }
  });

  it('name every schema in docs/schemas: each event and each object inside one titled', () => {
    for (const file of schemaFiles) {
      // The events (the root's alternatives) and installation, owner, the six state objects.
      const objects = objectSchemasOf(documents[file]);
      expect(objects.length, file).toBeGreaterThan(2);
      for (const { path, schema } of objects) {
        expect(schema.title, `${file} ${path}: untitled object`).toMatch(/^[A-Z][A-Za-z]+$/);
      }
    }
    // The same names as the AsyncAPI components of the same schemas.
    const titles = schemaFiles.flatMap((f) =>
      objectSchemasOf(documents[f]).flatMap(({ schema }) => schema.title ?? []),
    );
    expect(titles.length).toBeGreaterThan(20);
    for (const title of titles)
      expect(Object.keys(asyncapi.components.schemas), title).toContain(title);
  });

  it('name the form bodies of the OpenAPI document and the headers of the AsyncAPI one', () => {
    const bodies = Object.values(openapi.paths as Record<string, Doc>).flatMap((item) =>
      Object.values(item).flatMap((op: Doc) =>
        Object.values((op.requestBody?.content ?? {}) as Record<string, Doc>),
      ),
    );
    expect(bodies).toHaveLength(4);
    for (const { schema } of bodies) expect(schema.title).toMatch(/^Get[A-Za-z]+Form$/);
    const messages = Object.values(asyncapi.channels as Record<string, Doc>).flatMap((c) =>
      Object.values(c.messages as Record<string, Doc>),
    );
    const headers = messages.flatMap((m) => (m.headers ? [m.headers] : []));
    expect(headers.length).toBeGreaterThan(10);
    for (const h of headers) expect(h.title).toMatch(/^[A-Z][A-Za-z]+Headers$/);
  });

  it('describe every operation of the OpenAPI document', () => {
    for (const [path, item] of Object.entries(openapi.paths as Record<string, Doc>)) {
      for (const [method, op] of Object.entries(item)) {
        expect(op.description, `${method} ${path}`).toMatch(/\w/);
        for (const p of op.parameters ?? [])
          expect(p.description, `${path} ${p.name}`).toMatch(/\w/);
      }
    }
  });
});
