import { describe, expect, it } from 'vitest';
import { createPool } from '../../consumers/pool.js';

// Concurrent telemetry batches each get a Redis connection of their own (a connection answers
// in order, so a shared one queues a batch behind another's pipelines): the pool never lends
// one item to two users at once.

describe('createPool', () => {
  it('lends each item to one user at a time and queues the rest', async () => {
    const pool = createPool(['a', 'b']);
    const inUse = new Set<string>();
    let most = 0;
    const release: Array<() => void> = [];
    const users = Array.from({ length: 5 }, () =>
      pool.use(async (item) => {
        expect(inUse.has(item)).toBe(false);
        inUse.add(item);
        most = Math.max(most, inUse.size);
        await new Promise<void>((resolve) => release.push(resolve));
        inUse.delete(item);
        return item;
      }),
    );
    // Let the users through one at a time, as they get an item.
    for (let done = 0; done < 5; ) {
      await new Promise((r) => setImmediate(r));
      const next = release.shift();
      if (next) {
        next();
        done++;
      }
    }
    const lent = await Promise.all(users);
    expect(most).toBe(2);
    expect(new Set(lent)).toEqual(new Set(['a', 'b']));
  });

  it('gives the item back when the user fails', async () => {
    const pool = createPool([1]);
    await expect(pool.use(async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await pool.use(async (n) => n + 1)).toBe(2);
  });
});
