import { Counter, Gauge, type Registry } from 'prom-client';
import type { NearCache } from '../read-model/near-cache.js';

// What the near-cache does, for sizing it (docs/scaling.md): its hit ratio, how often it keeps
// or lets go of an installation, and what it holds. Read from its own counts when scraped:
// nothing per request.

export function registerNearCacheMetrics(registry: Registry, cache: NearCache): void {
  const seen = { hits: 0, misses: 0, warms: 0, released: 0 };
  const lookups = new Counter({
    name: 'api_near_cache_lookups_total',
    help: 'Near-cache lookups of an installation, by result: hit (answered from memory) or miss (read from Redis)',
    labelNames: ['result'] as const,
    registers: [registry],
    collect() {
      const now = cache.stats();
      lookups.inc({ result: 'hit' }, now.hits - seen.hits);
      lookups.inc({ result: 'miss' }, now.misses - seen.misses);
      seen.hits = now.hits;
      seen.misses = now.misses;
    },
  });
  const changes = new Counter({
    name: 'api_near_cache_changes_total',
    help: 'Installations the near-cache took in (warmed: subscribed and read) or let go of because writes outpaced hits (released)',
    labelNames: ['change'] as const,
    registers: [registry],
    collect() {
      const now = cache.stats();
      changes.inc({ change: 'warmed' }, now.warms - seen.warms);
      changes.inc({ change: 'released' }, now.released - seen.released);
      seen.warms = now.warms;
      seen.released = now.released;
    },
  });
  const entries = new Gauge({
    name: 'api_near_cache_entries',
    help: 'Installations the near-cache holds (API_NEAR_CACHE_ENTRIES at most)',
    registers: [registry],
    collect() {
      entries.set(cache.stats().entries);
    },
  });
  const bytes = new Gauge({
    name: 'api_near_cache_bytes',
    help: 'Bytes the near-cache holds, approximately (API_NEAR_CACHE_MAX_BYTES at most)',
    registers: [registry],
    collect() {
      bytes.set(cache.stats().bytes);
    },
  });
}
