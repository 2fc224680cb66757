import type { ChainableCommander, Redis } from 'ioredis';
import { valuesOrThrow } from './exec.js';

// Optimistic transactions (WATCH, read, MULTI/EXEC): used where one change spans several hash
// tags (a device moving between installations, an API key's views), so two consumers working on
// overlapping keys never interleave their writes. Needs a connection of its own: WATCH state is
// per connection, and another caller's EXEC would silently clear it.

export interface Watcher {
  watch(keys: readonly string[]): Promise<void>;
}

export interface Planned<T> {
  readonly result: T;
  readonly write: (multi: ChainableCommander) => void;
}

/** Thrown after too many conflicting writers in a row; the batch is retried with backoff. */
export class ContentionError extends Error {
  readonly retriable = true;
}

const MAX_ATTEMPTS = 50;

export async function optimistic<T>(
  conn: Redis,
  plan: (watcher: Watcher) => Promise<Planned<T>>,
): Promise<T> {
  const watcher: Watcher = {
    async watch(keys) {
      if (keys.length > 0) await conn.watch(...keys);
    },
  };
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    let planned: Planned<T>;
    try {
      planned = await plan(watcher);
    } catch (error) {
      await conn.unwatch().catch(() => undefined);
      throw error;
    }
    const multi = conn.multi();
    planned.write(multi);
    if (valuesOrThrow(await multi.exec()) === null) continue;
    return planned.result;
  }
  throw new ContentionError(`gave up after ${MAX_ATTEMPTS} conflicting transactions`);
}
