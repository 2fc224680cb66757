import {
  type Access,
  type ApiReader,
  type StoredFlow,
  UNAUTHORIZED,
  withGrant,
} from '../reader/api-reader.js';
import type { KeyAccess } from '../reader/key-access.js';
import type { ViewCache } from '../reader/view-cache.js';
import type { NearCache } from './near-cache.js';

/**
 * The reads of `base` served through the caches: devices and flow through the near-cache, views
 * through the view cache. The key is judged once per request (from memory, see key-access.ts),
 * then the near-cache answers with its one read.
 */
export function cachedReader(
  base: ApiReader,
  access: KeyAccess,
  cache: NearCache,
  views: ViewCache,
): ApiReader {
  return {
    keyLive: base.keyLive,
    installations: views.installations,
    viewPage: views.viewPage,
    // A hit answers without a promise: the route then answers in the same turn.
    devices(keyHash, id, nowMs) {
      return withGrant(access, keyHash, nowMs, (grant) => cache.read(grant, id, 'devices', nowMs));
    },
    async flows(keyHash, ids, nowMs) {
      const grant = access.peek(keyHash, nowMs) ?? (await access.resolve(keyHash, nowMs));
      if (grant === null) return ids.map(() => UNAUTHORIZED);
      // Hits from memory without a promise or an object each; misses as single reads, issued
      // together.
      const out: Array<Access<StoredFlow> | Promise<Access<StoredFlow>>> = new Array(ids.length);
      let misses = false;
      const monotonicMs = performance.now();
      for (let i = 0; i < ids.length; i++) {
        out[i] = cache.read(grant, ids[i] as number, 'flow', nowMs, monotonicMs);
        if (out[i] instanceof Promise) misses = true;
      }
      return misses ? Promise.all(out) : (out as Access<StoredFlow>[]);
    },
    flow(keyHash, id, nowMs) {
      return withGrant(access, keyHash, nowMs, (grant) => cache.read(grant, id, 'flow', nowMs));
    },
  };
}
