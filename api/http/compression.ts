import type { Transform } from 'node:stream';
import {
  brotliCompressSync,
  constants,
  createBrotliCompress,
  createGzip,
  gzipSync,
} from 'node:zlib';

// Content coding of a 200 (beyond.md §3), one setting for every path: brotli quality 4 and gzip
// level 6, buffered or streamed. Buffered answers are coded inline on the answer path rather
// than by an onSend plugin: a request without Accept-Encoding pays one header lookup and nothing
// else; synchronously, since bodies are a few KiB, where a thread-pool hop costs more than the
// work. Brotli quality 4 is within a few percent of the ratio of quality 11 on this JSON at a
// fraction of the CPU (quality 11, zlib's default, took ~3 s of CPU for a 640 KB list). A
// streamed answer is coded on the thread pool, by at most a bounded number of coders at once;
// past it, the answer goes out as identity, which costs bandwidth, not CPU.

export type Coding = 'br' | 'gzip';

/** Below this a compressed body saves less than its headers cost. */
export const MIN_COMPRESS_BYTES = 1024;

const BROTLI_OPTIONS = {
  params: {
    [constants.BROTLI_PARAM_QUALITY]: 4,
    [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
  },
};
const GZIP_OPTIONS = { level: 6 };

/**
 * The coding Accept-Encoding prefers among br and gzip (RFC 9110 §12.5.3): the higher q, br on
 * a tie; `*` stands for a coding not listed; q=0 refuses. Null: send identity.
 */
export function chooseCoding(acceptEncoding: string | undefined): Coding | null {
  if (acceptEncoding === undefined || acceptEncoding === '') return null;
  let br: number | null = null;
  let gzip: number | null = null;
  let any: number | null = null;
  for (const item of acceptEncoding.split(',')) {
    const [name = '', ...params] = item.split(';');
    const coding = name.trim().toLowerCase();
    let q = 1;
    for (const param of params) {
      const [k, v] = param.split('=');
      if (k?.trim().toLowerCase() === 'q') {
        const parsed = Number(v?.trim());
        q = Number.isFinite(parsed) && parsed >= 0 && parsed <= 1 ? parsed : 0;
      }
    }
    if (coding === 'br') br = q;
    else if (coding === 'gzip' || coding === 'x-gzip') gzip = q;
    else if (coding === '*') any = q;
  }
  const brQ = br ?? any ?? 0;
  const gzipQ = gzip ?? any ?? 0;
  if (brQ <= 0 && gzipQ <= 0) return null;
  return brQ >= gzipQ ? 'br' : 'gzip';
}

export function compress(body: string | Buffer, coding: Coding): Buffer {
  return coding === 'br' ? brotliCompressSync(body, BROTLI_OPTIONS) : gzipSync(body, GZIP_OPTIONS);
}

/** A coder for a streamed answer, with the same settings as `compress`. */
export function createCoder(coding: Coding): Transform {
  return coding === 'br' ? createBrotliCompress(BROTLI_OPTIONS) : createGzip(GZIP_OPTIONS);
}

export interface StreamCoders {
  /** A coder for one streamed answer, or null when `max` are at work (send identity). */
  take(coding: Coding): Transform | null;
  readonly active: number;
}

export function createStreamCoders(max: number): StreamCoders {
  let active = 0;
  return {
    get active() {
      return active;
    },
    take(coding) {
      if (active >= max) return null;
      active++;
      const coder = createCoder(coding);
      coder.once('close', () => active--);
      return coder;
    },
  };
}

/** A different coding is a different representation (RFC 9110 §8.8.3): its own strong tag. */
export function codedTag(identityTag: string, coding: Coding): string {
  return `${identityTag.slice(0, -1)}-${coding === 'br' ? 'br' : 'gz'}"`;
}
