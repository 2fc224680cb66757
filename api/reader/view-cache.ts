import { appViewVersionKey, type ReadModelKeys } from '../../src/read-model/keys.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import {
  type ApiReader,
  type PageRequest,
  parseViewPage,
  readPage,
  readViewPage,
  type StoredInstallations,
  UNAUTHORIZED,
} from './api-reader.js';
import type { KeyAccess } from './key-access.js';
import { packed } from './packed.js';
import { slotRouter } from './slot-router.js';
import { writeBatcher } from './write-batching.js';

// getInstallations' first pages through memory. Every change of an application's view bumps
// its version (write-view-entries-3.lua), so a page read together with the version is current
// for as long as that version stands: a request reads the version alone (a GET of a few bytes)
// and answers from memory when it matches; otherwise it reads the page with its version and
// keeps both. The key is judged per request before, as the uncached read does, so a refused key
// never reaches what is kept here. Later pages (a cursor) are read every time.

export interface ViewCache extends Pick<ApiReader, 'installations' | 'viewPage'> {
  readonly size: number;
  /** Forgets every page (the read model was rebuilt underneath). */
  clear(): void;
}

interface Entry {
  readonly version: string;
  readonly read: StoredInstallations;
}

export function createViewCache(deps: {
  redis: RedisClient;
  keys: ReadModelKeys;
  access: KeyAccess;
  /** First pages kept at most, least recently used out first. */
  entries: number;
}): ViewCache {
  const sendTo = slotRouter(deps.redis);
  const { keys, access } = deps;
  // The version's GET has a reply of a few bytes: requests of one turn share a socket write.
  const hold = writeBatcher(deps.redis);
  // Map order is insertion order: re-inserting on a hit makes the first key the least recent.
  const lru = new Map<string, Entry>();
  // Bumped by clear(): a read begun before it is not kept.
  let era = 0;
  // Requests of one application in the same turn of the event loop share one read of the version.
  const turn = new Map<number, Promise<string | null>>();
  const endTurn = () => turn.clear();
  function versionOf(app: number): Promise<string | null> {
    let read = turn.get(app);
    if (read === undefined) {
      if (turn.size === 0) setImmediate(endTurn);
      hold();
      const version = appViewVersionKey(keys, app);
      read = sendTo(version, (redis) => redis.get(version));
      turn.set(app, read);
    }
    return read;
  }

  async function fill(id: string, app: number, page: PageRequest): Promise<StoredInstallations> {
    const begun = era;
    const reply = await readViewPage(sendTo, keys, app, page);
    // A view never written has no version: nothing to check it by, read every time.
    const kept = (reply[0]?.length ?? 0) > 0 && begun === era;
    const { version, installations, more } = parseViewPage(
      kept ? packed(reply) : reply,
      page.limit,
    );
    const read = { app, installations, more, memo: { body: null } };
    if (kept) {
      lru.delete(id);
      lru.set(id, { version, read });
      if (lru.size > deps.entries) lru.delete(lru.keys().next().value as string);
    }
    return read;
  }

  const viewPage = (app: number, page: PageRequest) => readPage(sendTo, keys, app, page);

  return {
    get size() {
      return lru.size;
    },
    clear() {
      era++;
      lru.clear();
    },
    viewPage,
    async installations(keyHash, nowMs, page) {
      const grant = await access.resolve(keyHash, nowMs);
      if (grant === null) return UNAUTHORIZED;
      if (page.afterId !== null) return { kind: 'ok', value: await viewPage(grant.app, page) };
      const id = `${grant.app}:${page.limit}`;
      const entry = lru.get(id);
      if (entry === undefined) return { kind: 'ok', value: await fill(id, grant.app, page) };
      const version = await versionOf(grant.app);
      // Cleared or replaced meanwhile: whatever was read before the GET is not this entry.
      if (version !== entry.version || lru.get(id) !== entry)
        return { kind: 'ok', value: await fill(id, grant.app, page) };
      lru.delete(id);
      lru.set(id, entry);
      return { kind: 'ok', value: entry.read };
    },
  };
}
