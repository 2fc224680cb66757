import { describe, expect, it } from 'vitest';
import { createStreamLimits } from '../../api/streams/stream-limits.js';
import { createKeys } from '../../src/read-model/keys.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';

// The per-party stream caps (take/release); the application lookup is Redis's, covered by
// api-fair-limits.test.ts.
const limits = (perKey: number, perApplication: number, perClient: number) =>
  createStreamLimits({
    redis: {} as RedisClient,
    keys: createKeys('t:'),
    perKey,
    perApplication,
    perClient,
  });

describe('stream limits', () => {
  it('names the first cap a stream would pass: key, then application, then client', () => {
    const l = limits(1, 2, 3);
    expect(l.take('k1', 'a', 'c').ok).toBe(true);
    expect(l.take('k1', 'a', 'c')).toEqual({ ok: false, policy: 'streams-per-key', quota: 1 });
    expect(l.take('k2', 'a', 'c').ok).toBe(true);
    expect(l.take('k3', 'a', 'c')).toMatchObject({ policy: 'streams-per-application', quota: 2 });
    expect(l.take('k3', 'b', 'c').ok).toBe(true);
    expect(l.take('k4', 'b', 'c')).toMatchObject({ policy: 'streams-per-client', quota: 3 });
  });

  it('frees a slot once per release, and counts nothing for a refused stream', () => {
    const l = limits(1, 10, 0);
    const first = l.take('k', 'a', 'c');
    expect(l.take('k', 'a', 'c').ok).toBe(false);
    if (!first.ok) throw new Error('first stream refused');
    first.release();
    first.release();
    const second = l.take('k', 'a', 'c');
    expect(second.ok).toBe(true);
    expect(l.take('k', 'a', 'c').ok).toBe(false);
  });

  it('has no cap per client when the connection cap per client is 0', () => {
    const l = limits(100, 100, 0);
    for (let i = 0; i < 50; i++) expect(l.take(`k${i}`, 'a', 'one client').ok).toBe(true);
  });
});
