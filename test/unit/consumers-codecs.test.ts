import { compressSync } from 'snappy';
import { describe, expect, it } from 'vitest';
import { batchOffsetsOf, CODECS, UndecodableBatchError } from '../../consumers/kafka/codecs.js';

// The codec wrappers on their own; batches from a real Java producer are decoded in
// test/integration/consumers-codecs.test.ts.

const text = Buffer.from('{"type":"installation.upserted"}'.repeat(3_000));

describe('codecs', () => {
  it.each(['gzip', 'snappy', 'lz4'] as const)(
    '%s round-trips as kafkajs calls it',
    async (name) => {
      // kafkajs compresses its records Encoder and decompresses bytes.
      const codec = CODECS[name]();
      expect(await codec.decompress(await codec.compress({ buffer: text }))).toEqual(text);
    },
  );

  it('reads a raw snappy block as well as the xerial framing', async () => {
    expect(await CODECS.snappy().decompress(compressSync(text))).toEqual(text);
  });

  it('throws UndecodableBatchError, with the offsets from the batch header in front', async () => {
    // A record batch v2 header (61 bytes) for offsets 40-44, then a corrupt lz4 payload.
    const payload = Buffer.alloc(20, 0xee);
    const batch = Buffer.alloc(61 + payload.length);
    batch.writeBigInt64BE(40n, 0);
    batch.writeInt32BE(49 + payload.length, 8);
    batch.writeInt8(2, 16);
    batch.writeInt32BE(4, 23);
    payload.copy(batch, 61);
    const records = batch.subarray(61);
    expect(batchOffsetsOf(records)).toEqual({ base: '40', last: '44' });
    const error = await CODECS.lz4()
      .decompress(records)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UndecodableBatchError);
    expect(error).toMatchObject({
      codec: 'lz4',
      baseOffset: '40',
      lastOffset: '44',
      retriable: false,
    });
  });
});
