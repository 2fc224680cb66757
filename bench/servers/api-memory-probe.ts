import { renameSync, writeFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { constants, PerformanceObserver } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

// The API process (api/main.ts, or API_MAIN: the entry of another checkout, to measure an older
// version with the same probe) with its own process.memoryUsage() written to MEMORY_FILE every
// 200 ms, so bench/cases/memory-after-load.ts sees the V8 heap, external and array-buffer memory
// beside the RSS it reads from /proc. On SIGUSR2: a full GC first, then a
// sample, to tell what the heap would give back from what the allocator keeps.

// gc() without --expose-gc on the command line (startChild gives none).
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const file = process.env.MEMORY_FILE;
if (!file) throw new Error('MEMORY_FILE is required');
// Written aside, then renamed: a reader never sees half a sample.
const sample = (gcRuns: number) => {
  writeFileSync(
    `${file}.tmp`,
    JSON.stringify({
      ...process.memoryUsage(),
      gcRuns,
      majorGcs,
      lastMajorGcAt,
      lastMajorGcMs,
      at: Date.now(),
    }),
  );
  renameSync(`${file}.tmp`, file);
};
// Major GCs V8 ran by itself (not the probe's): whether its memory reducer acts at rest.
let majorGcs = 0;
let lastMajorGcAt = 0;
let lastMajorGcMs = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = (entry as { detail?: { kind?: number } }).detail?.kind;
    if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) {
      majorGcs++;
      lastMajorGcAt = Date.now();
      lastMajorGcMs = entry.duration;
    }
  }
}).observe({ entryTypes: ['gc'] });
let gcRuns = 0;
setInterval(() => sample(gcRuns), 200).unref();
process.on('SIGUSR2', () => {
  for (let i = 0; i < 3; i++) gc();
  gcRuns++;
  sample(gcRuns);
});
const main = process.env.API_MAIN;
await import(
  main
    ? pathToFileURL(isAbsolute(main) ? main : resolve(process.cwd(), main)).href
    : '../../api/main.js'
);
