import { keyViewGenerationKey, type ReadModelKeys } from '../../src/read-model/keys.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import { isViewLive } from './access-check.js';
import { type Access, type KeyView, parseKeyView, type StoredInstallations } from './api-reader.js';
import { slotRouter } from './slot-router.js';
import { writeBatcher } from './write-batching.js';

// getInstallations through memory. Every write of a key view sets a generation no earlier write
// used (write-key-view-2.lua: the application's recompute counter; a revocation, an expiry change
// or a lost grant is such a write, and so is a deletion), so a view read together with its
// generation is current for as long as that generation stands. A request reads the generation
// alone (a GET of a few bytes) and answers from memory when it matches; otherwise it reads the
// view and its generation in one script and keeps both. Liveness is still judged per request
// against the view's `exp`, as the uncached read does, and a refusal is never kept: an unknown,
// revoked or expired key costs the same read whatever this process remembers.

export interface KeyViewCache {
  installations(keyHash: string, nowMs: number): Promise<Access<StoredInstallations>>;
  readonly size: number;
  /** Forgets every view (the read model was rebuilt underneath). */
  clear(): void;
}

interface Entry {
  readonly generation: string;
  readonly view: KeyView;
  readonly read: StoredInstallations;
}

const UNAUTHORIZED = { kind: 'unauthorized' } as const;

export function createKeyViewCache(deps: {
  redis: RedisClient;
  keys: ReadModelKeys;
  /** Views kept at most, least recently used out first. */
  entries: number;
}): KeyViewCache {
  const sendTo = slotRouter(deps.redis);
  const { keys } = deps;
  // The generation's GET has a reply of a few bytes: requests of one turn share a socket write.
  const hold = writeBatcher(deps.redis);
  // Map order is insertion order: re-inserting on a hit makes the first key the least recent.
  const lru = new Map<string, Entry>();
  // Bumped by clear(): a read begun before it is not kept.
  let era = 0;
  // Requests of one key that arrive in the same turn of the event loop share one read of the
  // generation, issued in that turn (on a cluster it may leave before the later ones arrive: a
  // view written within that round trip shows on their next request, as if they came earlier).
  const turn = new Map<string, Promise<string | null>>();
  const endTurn = () => turn.clear();
  function generationOf(keyHash: string): Promise<string | null> {
    let read = turn.get(keyHash);
    if (read === undefined) {
      if (turn.size === 0) setImmediate(endTurn);
      hold();
      const generation = keyViewGenerationKey(keys, keyHash);
      read = sendTo(generation, (redis) => redis.get(generation));
      turn.set(keyHash, read);
    }
    return read;
  }

  const answer = (entry: Entry, nowMs: number): Access<StoredInstallations> =>
    isViewLive(entry.view.app, entry.view.exp, nowMs)
      ? { kind: 'ok', value: entry.read }
      : UNAUTHORIZED;

  async function fill(keyHash: string, nowMs: number): Promise<Access<StoredInstallations>> {
    const begun = era;
    const viewKey = keys.keyView(keyHash);
    const flat = await sendTo(viewKey, (redis) =>
      redis.apiReadKeyViewBuffer(viewKey, keyViewGenerationKey(keys, keyHash)),
    );
    const generation = String(flat[0] ?? '');
    const view = parseKeyView(flat, 1);
    if (!isViewLive(view.app, view.exp, nowMs)) {
      lru.delete(keyHash);
      return UNAUTHORIZED;
    }
    const read = { installations: view.installations, memo: { body: null } };
    // A view written without a generation cannot be checked cheaply: it is read every time.
    if (generation !== '' && begun === era) {
      lru.delete(keyHash);
      lru.set(keyHash, { generation, view, read });
      if (lru.size > deps.entries) lru.delete(lru.keys().next().value as string);
    }
    return { kind: 'ok', value: read };
  }

  return {
    get size() {
      return lru.size;
    },
    clear() {
      era++;
      lru.clear();
    },
    async installations(keyHash, nowMs) {
      const entry = lru.get(keyHash);
      if (entry === undefined) return fill(keyHash, nowMs);
      const generation = await generationOf(keyHash);
      // Cleared or replaced meanwhile: whatever was read before the GET is not this entry.
      if (generation !== entry.generation || lru.get(keyHash) !== entry)
        return fill(keyHash, nowMs);
      lru.delete(keyHash);
      lru.set(keyHash, entry);
      return answer(entry, nowMs);
    },
  };
}
