import { Counter, Gauge, type Registry } from 'prom-client';
import type { NearCache, NearCacheStats } from '../near-cache/near-cache.js';

// What the near-cache does, for sizing it (docs/scaling.md): its hit ratio, how often it keeps
// or lets go of an installation, and what it holds. Read from its own counts when scraped:
// nothing per request.

type Count = 'hits' | 'misses' | 'bypassed' | 'warms' | 'released' | 'stepsOut' | 'stepsBack';

export function registerNearCacheMetrics(registry: Registry, cache: NearCache): void {
  /** A counter brought up to the cache's own counts (one label value per count) when scraped. */
  const counter = (name: string, help: string, label: string, counts: Record<string, Count>) => {
    const seen = new Map<Count, number>();
    const metric: Counter<string> = new Counter({
      name,
      help,
      labelNames: [label],
      registers: [registry],
      collect() {
        const now: NearCacheStats = cache.stats();
        for (const [value, count] of Object.entries(counts)) {
          metric.inc({ [label]: value }, now[count] - (seen.get(count) ?? 0));
          seen.set(count, now[count]);
        }
      },
    });
  };
  /** A gauge set from the cache's stats when scraped. */
  const gauge = (name: string, help: string, value: (stats: NearCacheStats) => number) => {
    const metric: Gauge = new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        metric.set(value(cache.stats()));
      },
    });
  };
  counter(
    'api_near_cache_lookups_total',
    'Near-cache lookups of an installation, by result: hit (answered from memory), miss (read from Redis) or bypassed (read from Redis with no lookup: the cache was out of the way)',
    'result',
    { hit: 'hits', miss: 'misses', bypassed: 'bypassed' },
  );
  counter(
    'api_near_cache_steps_total',
    'Times the near-cache stepped out of the way (out: it did not pay) and came back (back: its sample showed reuse); many of both mean traffic at the edge of paying',
    'step',
    { out: 'stepsOut', back: 'stepsBack' },
  );
  counter(
    'api_near_cache_changes_total',
    'Installations the near-cache took in (warmed: subscribed and read) or let go of because writes outpaced hits (released)',
    'change',
    { warmed: 'warms', released: 'released' },
  );
  gauge(
    'api_near_cache_bypass',
    'Whether the near-cache is out of the way (1: it did not pay in the traffic of late, and keeps only a sampled share of installations to judge when to come back)',
    (stats) => (stats.bypass ? 1 : 0),
  );
  gauge(
    'api_near_cache_entries',
    'Installations the near-cache holds (API_NEAR_CACHE_ENTRIES at most)',
    (stats) => stats.entries,
  );
  gauge(
    'api_near_cache_bytes',
    'Bytes the near-cache holds, approximately (API_NEAR_CACHE_MAX_BYTES at most)',
    (stats) => stats.bytes,
  );
}
