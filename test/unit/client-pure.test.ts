import { describe, expect, it } from 'vitest';
import { backoffDelayMs, retryAfterWithJitterMs } from '../../clients/typescript/src/backoff.js';
import { chunkIds } from '../../clients/typescript/src/bulk.js';
import { EtagCache } from '../../clients/typescript/src/etag-cache.js';
import {
  parseRateLimit,
  parseRetryAfter,
  spacingMs,
} from '../../clients/typescript/src/rate-limit.js';
import { createSseParser } from '../../clients/typescript/src/sse-parser.js';

// The client's pure pieces (clients/typescript/src): what its behaviour against the API rests on.
describe('client: SSE framing', () => {
  it('dispatches events split anywhere across chunks, with any line ending', () => {
    const text =
      ': keep-alive\n\nevent: energyFlow\r\nid: "a"\r\ndata: {"x":1}\r\n\r\nevent: revoked\rdata: {}\r\r';
    for (let cut = 0; cut <= text.length; cut++) {
      const parser = createSseParser();
      const events = [...parser.push(text.slice(0, cut)), ...parser.push(text.slice(cut))];
      expect(events).toEqual([
        { event: 'energyFlow', id: '"a"', data: '{"x":1}' },
        { event: 'revoked', id: undefined, data: '{}' },
      ]);
    }
  });

  it('joins data lines, skips events without data, reads retry', () => {
    const parser = createSseParser();
    expect(parser.push('event: x\n\ndata: a\ndata: b\nretry: 1500\n\n')).toEqual([
      { event: 'message', id: undefined, data: 'a\nb' },
    ]);
    expect(parser.retryMs).toBe(1500);
  });
});

describe('client: quota headers', () => {
  const headers = (h: Record<string, string>) => new Headers(h);

  it('reads RateLimit and RateLimit-Policy as the API writes them', () => {
    const state = parseRateLimit(
      headers({ 'ratelimit-policy': '"default";q=100;w=60', ratelimit: '"default";r=42;t=17' }),
      1_000,
    );
    expect(state).toEqual({ limit: 100, windowSeconds: 60, remaining: 42, resetAtMs: 18_000 });
    expect(parseRateLimit(headers({}), 0)).toBeNull();
  });

  it('spreads the requests left over the time left, and waits for the reset when none are', () => {
    const state = { limit: 10, windowSeconds: 60, remaining: 4, resetAtMs: 9_000 };
    expect(spacingMs(state, 1_000)).toBe(2_000);
    expect(spacingMs({ ...state, remaining: 0 }, 1_000)).toBe(8_000);
  });

  it('spaces by what the next request likely costs: a tenth after a 304', () => {
    const state = { limit: 10, windowSeconds: 60, remaining: 4, resetAtMs: 9_000 };
    expect(spacingMs(state, 1_000, 0.1)).toBe(200);
    // `r` is whole units rounded down: at 0 the tenths that may be left are not counted on.
    expect(spacingMs({ ...state, remaining: 0 }, 1_000, 0.1)).toBe(8_000);
  });

  it('reads Retry-After as seconds or an HTTP-date', () => {
    expect(parseRetryAfter('5', 0)).toBe(5_000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
    expect(parseRetryAfter('soon', 0)).toBeNull();
    expect(parseRetryAfter(null, 0)).toBeNull();
  });
});

describe('client: waits', () => {
  it('backs off exponentially with full jitter, capped', () => {
    const options = { baseDelayMs: 100, maxDelayMs: 1_000 };
    expect([0, 1, 2, 3, 4, 10].map((a) => backoffDelayMs(a, options, () => 1))).toEqual([
      100, 200, 400, 800, 1_000, 1_000,
    ]);
    expect(backoffDelayMs(3, options, () => 0)).toBe(0);
  });

  it('never comes back before Retry-After, and spreads clients after it', () => {
    expect(retryAfterWithJitterMs(5_000, () => 0)).toBe(5_000);
    expect(retryAfterWithJitterMs(5_000, () => 1)).toBe(5_500);
    expect(retryAfterWithJitterMs(60_000, () => 1)).toBe(61_000);
  });
});

describe('client: bulk chunks', () => {
  it('sorts and dedupes ids into chunks of at most 100', () => {
    const ids = Array.from({ length: 251 }, (_, i) => 1_000 - i);
    const chunks = chunkIds([...ids, 1_000, 999]);
    expect(chunks.map((c) => c.length)).toEqual([100, 100, 51]);
    expect(chunks.flat()).toEqual([...ids].reverse());
    expect(() => chunkIds([1.5])).toThrow(RangeError);
  });
});

describe('client: conditional cache', () => {
  const entry = (size: number) => ({ etag: '"t"', body: {}, lastModified: null, size });

  it('keeps at most maxEntries, least recently used out first', () => {
    const cache = new EtagCache({ maxEntries: 2, maxBytes: 1_000 });
    cache.set('a', entry(1));
    cache.set('b', entry(1));
    cache.get('a');
    cache.set('c', entry(1));
    expect([cache.get('a'), cache.get('b'), cache.get('c')].map(Boolean)).toEqual([
      true,
      false,
      true,
    ]);
  });

  it('keeps at most maxBytes, and never a body larger than all of it', () => {
    const cache = new EtagCache({ maxEntries: 10, maxBytes: 100 });
    cache.set('a', entry(60));
    cache.set('b', entry(60));
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('b')).toBeDefined();
    cache.set('huge', entry(101));
    expect(cache.get('huge')).toBeUndefined();
    expect(cache.size).toBe(1);
  });
});
