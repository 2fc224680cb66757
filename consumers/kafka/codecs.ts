import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { decompress as zstdDecompress } from 'fzstd';
import kafkajs from 'kafkajs';
import { compressFrame as lz4Compress, decompressFrame as lz4Decompress } from 'lz4-napi';
import { compressSync as snappyCompress, uncompress as snappyUncompress } from 'snappy';

// kafkajs decodes only gzip itself; Java, Go and librdkafka producers often use snappy, lz4 or
// zstd. Registered here once per process, for every client: kafkajs's codec table is global.
// - snappy: Java's snappy-java writes the xerial stream framing (a 16-byte header, then
//   length-prefixed blocks); librdkafka writes it too, others send one raw block.
// - lz4: the LZ4 frame format (record batch v2; Kafka 0.10's broken checksum is only in v0/v1).
// - zstd: a standard zstd frame. No native zstd package installs from the npm registry alone, so
//   decoding is pure JS (fzstd); this process never produces zstd.
// A batch that does not decode throws UndecodableBatchError under the name kafkajs gives a
// truncated batch at the end of a fetch: kafkajs then keeps the records before it and the other
// partitions of the fetch, and stops that partition's record set there. So one bad batch stops
// only its own partition, and only at its own offset; the listeners (the topic runners) are
// told, find the partition standing at that offset and stop loudly (consumers/liveness.ts).

type UndecodableListener = (error: UndecodableBatchError) => void;
const listeners = new Set<UndecodableListener>();

/** Called on every failed decode (kafkajs refetches the partition, so it repeats). */
export function onUndecodableBatch(listener: UndecodableListener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export class UndecodableBatchError extends Error {
  override readonly name = 'KafkaJSPartialMessageError';
  /** Should kafkajs ever crash on it: never restart at the same batch. */
  readonly retriable = false;
  constructor(
    readonly codec: string,
    /** First and last offset of the record batch, read from its header when kafkajs kept it. */
    readonly baseOffset: string | null,
    readonly lastOffset: string | null,
    failure: unknown,
  ) {
    const where = baseOffset === null ? '' : ` at offsets ${baseOffset}-${lastOffset}`;
    const why = failure instanceof Error ? failure.message : String(failure);
    // No `cause`: kafkajs wraps an error as `{ cause: e.cause || e }`, and this one must survive.
    super(`${codec} record batch${where} cannot be decoded: ${why}`);
  }
}

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00]);
const XERIAL_HEADER_BYTES = 16;
const XERIAL_BLOCK_BYTES = 32 * 1024;

async function snappyDecode(input: Buffer): Promise<Buffer> {
  const asBuffer = async (block: Buffer) =>
    (await snappyUncompress(block, { asBuffer: true })) as Buffer;
  if (input.length < XERIAL_HEADER_BYTES || !input.subarray(0, 8).equals(XERIAL_MAGIC)) {
    return asBuffer(input);
  }
  const blocks: Buffer[] = [];
  let at = XERIAL_HEADER_BYTES;
  while (at < input.length) {
    if (at + 4 > input.length) throw new Error('truncated xerial block length');
    const size = input.readInt32BE(at);
    at += 4;
    if (size < 0 || at + size > input.length) throw new Error('truncated xerial block');
    blocks.push(await asBuffer(input.subarray(at, at + size)));
    at += size;
  }
  return Buffer.concat(blocks);
}

/** The xerial framing Java consumers expect, so a kafkajs producer's snappy batches read anywhere. */
function snappyEncode(input: Buffer): Buffer {
  const header = Buffer.alloc(XERIAL_HEADER_BYTES);
  XERIAL_MAGIC.copy(header);
  header.writeInt32BE(1, 8); // version
  header.writeInt32BE(1, 12); // minimum compatible version
  const parts: Buffer[] = [header];
  for (let at = 0; at < input.length; at += XERIAL_BLOCK_BYTES) {
    const block = snappyCompress(input.subarray(at, at + XERIAL_BLOCK_BYTES));
    const size = Buffer.alloc(4);
    size.writeInt32BE(block.length);
    parts.push(size, block);
  }
  return Buffer.concat(parts);
}

// RecordBatch v2: baseOffset int64 @0, batchLength int32 @8, magic int8 @16, attributes int16
// @21, lastOffsetDelta int32 @23, record count int32 @57, records from @61.
const RECORDS_AT = 61;

/**
 * kafkajs hands the codec a view into the fetch response; when the bytes before it are this
 * batch's own header (its length and magic agree), the batch's offsets are read from there.
 */
export function batchOffsetsOf(records: Buffer): { base: string; last: string } | null {
  if (records.byteOffset < RECORDS_AT) return null;
  const header = Buffer.from(records.buffer, records.byteOffset - RECORDS_AT, RECORDS_AT);
  if (header.readInt8(16) !== 2 || header.readInt32BE(8) - 49 !== records.length) return null;
  const base = header.readBigInt64BE(0);
  return { base: base.toString(), last: (base + BigInt(header.readInt32BE(23))).toString() };
}

type Codec = { compress(buf: Buffer): Promise<Buffer>; decompress(buf: Buffer): Promise<Buffer> };
/** kafkajs hands compress() its records Encoder and decompress() the bytes. */
type KafkajsCodec = {
  compress(encoder: { buffer: Buffer }): Promise<Buffer>;
  decompress(buf: Buffer): Promise<Buffer>;
};

function guarded(name: string, codec: Codec): () => KafkajsCodec {
  const wrapped: KafkajsCodec = {
    compress: (encoder) => codec.compress(encoder.buffer),
    async decompress(buf) {
      try {
        return await codec.decompress(buf);
      } catch (error) {
        const offsets = batchOffsetsOf(buf);
        const failure = new UndecodableBatchError(
          name,
          offsets?.base ?? null,
          offsets?.last ?? null,
          error,
        );
        for (const listener of listeners) listener(failure);
        throw failure;
      }
    },
  };
  return () => wrapped;
}

export const CODECS = {
  // Same as kafkajs's own gzip, guarded like the others so a corrupt batch crashes, not loops.
  gzip: guarded('gzip', { compress: promisify(gzip), decompress: promisify(gunzip) }),
  snappy: guarded('snappy', {
    compress: async (buf) => snappyEncode(buf),
    decompress: snappyDecode,
  }),
  lz4: guarded('lz4', {
    compress: (buf) => lz4Compress(buf),
    decompress: (buf) => lz4Decompress(buf),
  }),
  zstd: guarded('zstd', {
    compress: async () => {
      throw new Error('this process decodes zstd but does not produce it');
    },
    decompress: async (buf) => Buffer.from(zstdDecompress(buf)),
  }),
} as const;

/** Installs the decoders into kafkajs's global codec table (idempotent). */
export function registerCodecs(): void {
  // Off the default export: Node's ESM loader does not see these two as named CJS exports.
  const { CompressionCodecs, CompressionTypes } = kafkajs;
  CompressionCodecs[CompressionTypes.GZIP] = CODECS.gzip;
  CompressionCodecs[CompressionTypes.Snappy] = CODECS.snappy;
  CompressionCodecs[CompressionTypes.LZ4] = CODECS.lz4;
  CompressionCodecs[CompressionTypes.ZSTD] = CODECS.zstd;
}
