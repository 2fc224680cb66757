// The Confluent wire format of a registry-framed value: magic byte 0, the schema id as a 4-byte
// big-endian integer, then the payload; for Protobuf the payload opens with the message
// indexes (which message of the schema's file: a zigzag varint count, then that many zigzag
// varint indexes; a count of 0 stands for [0]). JSON text never starts with byte 0, so a
// plain JSON value is never taken for a framed one. @kafkajs/confluent-schema-registry writes
// no indexes (it always means the file's first message): its payload then starts with a field
// tag, at least 0x08, where an index list of depth 1-3 starts with 0x00-0x06, so both read.

export const MAGIC_BYTE = 0;
export const HEADER_BYTES = 5;

/** True when the value claims the wire format (its first byte is the magic byte). */
export const isFramed = (value: Uint8Array | null | undefined): value is Uint8Array =>
  value !== null && value !== undefined && value.length > 0 && value[0] === MAGIC_BYTE;

/** The schema id of a framed value, or null when it is shorter than the header. */
export function schemaIdOf(value: Uint8Array): number | null {
  if (value.length < HEADER_BYTES) return null;
  return (
    ((value[1] as number) * 2 ** 24 +
      ((value[2] as number) << 16) +
      ((value[3] as number) << 8) +
      (value[4] as number)) >>>
    0
  );
}

/** Writes the header (and, for Protobuf, the message indexes) before a payload. */
export function frame(schemaId: number, payload: Uint8Array, indexes?: readonly number[]): Buffer {
  const head = Buffer.alloc(HEADER_BYTES);
  head.writeUInt32BE(schemaId, 1);
  const parts: Uint8Array[] = [head];
  if (indexes) parts.push(encodeIndexes(indexes));
  parts.push(payload);
  return Buffer.concat(parts);
}

function zigzagVarint(n: number, out: number[]): void {
  let v = n >= 0 ? n * 2 : -n * 2 - 1;
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
}

/** The message indexes as Confluent writes them: [0] as the single byte 0. */
export function encodeIndexes(indexes: readonly number[]): Uint8Array {
  if (indexes.length === 1 && indexes[0] === 0) return Uint8Array.of(0);
  const out: number[] = [];
  zigzagVarint(indexes.length, out);
  for (const i of indexes) zigzagVarint(i, out);
  return Uint8Array.from(out);
}

/** Deeper nesting would collide with a tag byte: a count of 4 is the byte 0x08. */
const MAX_INDEX_DEPTH = 3;
const NO_INDEXES_FIRST_BYTE = 0x08;

/** Reads the message indexes at `offset`; null when they are malformed. */
export function readIndexes(
  value: Uint8Array,
  offset: number,
): { readonly indexes: number[]; readonly offset: number } | null {
  // No indexes: a Protobuf field tag (field number >= 1) where the count would be.
  if (offset < value.length && (value[offset] as number) >= NO_INDEXES_FIRST_BYTE) {
    return { indexes: [0], offset };
  }
  let at = offset;
  const next = (): number | null => {
    let result = 0;
    let scale = 1;
    for (let i = 0; i < 5; i++) {
      if (at >= value.length) return null;
      const byte = value[at++] as number;
      result += (byte & 0x7f) * scale;
      if (byte < 0x80) return result % 2 === 0 ? result / 2 : -(result + 1) / 2;
      scale *= 128;
    }
    return null;
  };
  const count = next();
  if (count === null || count < 0 || count > MAX_INDEX_DEPTH) return null;
  if (count === 0) return { indexes: [0], offset: at };
  const indexes: number[] = [];
  for (let i = 0; i < count; i++) {
    const index = next();
    if (index === null || index < 0) return null;
    indexes.push(index);
  }
  return { indexes, offset: at };
}
