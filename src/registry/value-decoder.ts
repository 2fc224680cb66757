import avro from 'avsc';
import protobuf from 'protobufjs';
import { toJsonForm } from './json-form.js';
import type { RegistryClient } from './registry-client.js';
import { HEADER_BYTES, isFramed, readIndexes, schemaIdOf } from './wire-format.js';

// Registry-framed value -> the JSON form of its event, with the writer's schema fetched by id
// and compiled once. `load` fetches the ids a batch needs (and throws, retriable, while the
// registry is unreachable); `decode` then runs without I/O, message by message.

export type DecodeResult =
  | { readonly ok: true; readonly value: Record<string, unknown> | Uint8Array }
  | {
      readonly ok: false;
      readonly reason: 'unknown_schema_id' | 'undecodable_value';
      readonly detail: string;
    };

export interface RegistryDecoder {
  /** Fetches and compiles the writer schemas of these values that are not known yet. */
  load(values: readonly (Uint8Array | null)[]): Promise<void>;
  /**
   * A framed value decoded: an object (Avro, Protobuf) or the JSON bytes (JSON Schema) for the
   * topic's parser. Only after `load` saw it.
   */
  decode(value: Uint8Array): DecodeResult;
}

type Compiled =
  | { readonly kind: 'avro'; readonly type: avro.Type }
  | { readonly kind: 'protobuf'; readonly file: protobuf.Namespace }
  | { readonly kind: 'json' }
  | { readonly kind: 'unknown' }
  | { readonly kind: 'invalid'; readonly detail: string };

const undecodable = (detail: string): DecodeResult => ({
  ok: false,
  reason: 'undecodable_value',
  detail,
});

export function createRegistryDecoder(client: RegistryClient): RegistryDecoder {
  const compiled = new Map<number, Compiled>();
  const loading = new Map<number, Promise<void>>();
  const fetchOne = (id: number): Promise<void> => {
    let pending = loading.get(id);
    if (pending === undefined) {
      pending = client
        .schemaById(id)
        .then((schema) => {
          // An unknown id is not cached: a schema registered later under it is read then.
          if (schema === null) compiled.set(id, { kind: 'unknown' });
          else compiled.set(id, compile(schema.schemaType, schema.schema));
        })
        .finally(() => loading.delete(id));
      loading.set(id, pending);
    }
    return pending;
  };
  return {
    async load(values) {
      const ids = new Set<number>();
      for (const value of values) {
        if (!isFramed(value)) continue;
        const id = schemaIdOf(value);
        const known = id === null ? undefined : compiled.get(id);
        if (id !== null && (known === undefined || known.kind === 'unknown')) ids.add(id);
      }
      await Promise.all([...ids].map(fetchOne));
    },
    decode(value) {
      const id = schemaIdOf(value);
      if (id === null) return undecodable(`${value.length} bytes: shorter than the 5-byte header`);
      const schema = compiled.get(id);
      if (schema === undefined || schema.kind === 'unknown') {
        return { ok: false, reason: 'unknown_schema_id', detail: `schema id ${id} is unknown` };
      }
      return decodeWith(schema, id, value);
    },
  };
}

function compile(schemaType: string, text: string): Compiled {
  try {
    if (schemaType === 'AVRO') return { kind: 'avro', type: avro.Type.forSchema(JSON.parse(text)) };
    if (schemaType === 'PROTOBUF') {
      const parsed = protobuf.parse(text, { keepCase: true });
      const file = parsed.package ? parsed.root.lookup(parsed.package) : parsed.root;
      if (!(file instanceof protobuf.Namespace)) throw new Error('no package namespace');
      return { kind: 'protobuf', file };
    }
    if (schemaType === 'JSON') return { kind: 'json' };
    return { kind: 'invalid', detail: `schema type ${schemaType.slice(0, 32)} is not read here` };
  } catch (error) {
    return {
      kind: 'invalid',
      detail: `writer schema does not compile: ${(error as Error).message}`,
    };
  }
}

function decodeWith(schema: Compiled, id: number, value: Uint8Array): DecodeResult {
  if (schema.kind === 'invalid') return undecodable(`schema id ${id}: ${schema.detail}`);
  if (schema.kind === 'json') return { ok: true, value: value.subarray(HEADER_BYTES) };
  try {
    if (schema.kind === 'avro') {
      const decoded = schema.type.fromBuffer(
        Buffer.from(value.buffer, value.byteOffset + HEADER_BYTES, value.length - HEADER_BYTES),
      );
      if (typeof decoded !== 'object' || decoded === null)
        return undecodable(`schema id ${id}: not a record`);
      return { ok: true, value: toJsonForm(decoded as Record<string, unknown>, 'AVRO') };
    }
    if (schema.kind === 'protobuf') {
      const at = readIndexes(value, HEADER_BYTES);
      if (at === null) return undecodable(`schema id ${id}: malformed Protobuf message indexes`);
      const type = messageAt(schema.file, at.indexes);
      if (type === null) {
        return undecodable(`schema id ${id}: no message at index ${at.indexes.join('.')}`);
      }
      const message = type.decode(value.subarray(at.offset));
      const object = type.toObject(message, { longs: Number, defaults: false, arrays: false });
      return { ok: true, value: toJsonForm(object, 'PROTOBUF') };
    }
  } catch (error) {
    // The decoder's message names a position or a type, never the bytes.
    return undecodable(`schema id ${id}: ${(error as Error).message.slice(0, 200)}`);
  }
  return undecodable(`schema id ${id}: no decoder`);
}

/** The message the indexes name: the file's top-level messages, then nested ones. */
function messageAt(file: protobuf.Namespace, indexes: readonly number[]): protobuf.Type | null {
  let scope: protobuf.Namespace = file;
  let found: protobuf.Type | null = null;
  for (const index of indexes) {
    const messages = scope.nestedArray.filter(
      (n): n is protobuf.Type => n instanceof protobuf.Type,
    );
    const next = messages[index];
    if (next === undefined) return null;
    found = next;
    scope = next;
  }
  return found;
}
