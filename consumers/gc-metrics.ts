import { PerformanceObserver } from 'node:perf_hooks';
import { Counter, type Registry } from 'prom-client';

// Garbage collection's pauses of the main thread, summed: the ingest bench reports them per
// event (bench/cases/ingest-reference.ts), and an operator sees allocation churn grow.

export function countGcPauses(registry: Registry): () => void {
  const pauses = new Counter({
    name: 'ingest_gc_pause_seconds_total',
    help: 'Time the main thread spent paused by garbage collection',
    registers: [registry],
  });
  const observer = new PerformanceObserver((list) => {
    let ms = 0;
    for (const entry of list.getEntries()) ms += entry.duration;
    pauses.inc(ms / 1000);
  });
  observer.observe({ entryTypes: ['gc'] });
  return () => observer.disconnect();
}
