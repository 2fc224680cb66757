import { once } from 'node:events';
import type { Transform } from 'node:stream';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { compress, createStreamCoders } from '../../api/http/compression.js';

// The coders of streamed lists (issue 57 item 2): the documented level (brotli quality 4, gzip
// 6) on the streamed path as on the buffered one, and at most API_COMPRESSED_STREAMS_MAX of them
// at once: past it an answer goes out as identity, and a slot frees when its answer ends,
// however it ends.

/** A list-like JSON body of about 200 KiB. */
const BODY = Buffer.from(
  JSON.stringify({
    valid: true,
    installations: Array.from({ length: 2_000 }, (_, i) => ({
      id: i + 1,
      name: `Installation ${i + 1}`,
      type: i % 3 === 0 ? 'residential' : 'commercial',
    })),
  }),
);

async function code(coder: Transform, body: Buffer): Promise<Buffer> {
  const chunks: Buffer[] = [];
  coder.on('data', (chunk: Buffer) => chunks.push(chunk));
  coder.end(body);
  await once(coder, 'end');
  return Buffer.concat(chunks);
}

const brotliAt = (quality: number) =>
  brotliCompressSync(BODY, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: quality,
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
    },
  });

describe('stream coders', () => {
  it('code br at quality 4 and gzip at level 6, as the buffered path does', async () => {
    const coders = createStreamCoders(2);
    const br = await code(coders.take('br') as Transform, BODY);
    expect(br.equals(brotliAt(4))).toBe(true);
    expect(br.equals(brotliAt(11))).toBe(false);
    expect(br.equals(compress(BODY, 'br'))).toBe(true);
    const gzip = await code(coders.take('gzip') as Transform, BODY);
    expect(gzip.equals(gzipSync(BODY, { level: 6 }))).toBe(true);
  });

  it('give at most max at once, and a slot back when an answer ends or its client leaves', async () => {
    const coders = createStreamCoders(2);
    const first = coders.take('br') as Transform;
    const second = coders.take('gzip') as Transform;
    expect([first, second].every((c) => c !== null)).toBe(true);
    expect(coders.take('br')).toBeNull();
    expect(coders.active).toBe(2);
    // A client gone: the answer's pipeline destroys its coder.
    const firstClosed = once(first, 'close');
    first.destroy();
    await firstClosed;
    expect(coders.active).toBe(1);
    const third = coders.take('br') as Transform;
    expect(third).not.toBeNull();
    expect(coders.take('gzip')).toBeNull();
    // An answer that ends: its coder closes once read to the end.
    const secondClosed = once(second, 'close');
    await code(second, BODY);
    await secondClosed;
    expect(coders.active).toBe(1);
    const thirdClosed = once(third, 'close');
    third.destroy();
    await thirdClosed;
    expect(coders.active).toBe(0);
  });
});
