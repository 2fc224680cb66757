import { performance } from 'node:perf_hooks';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Logger } from 'pino';

// V8 allocates an allocation site's objects straight in the old generation once most of those
// it finds in a scavenge survived it ("pretenuring"). A server under load can reach that
// decision from a transient (a burst of reads in flight when a scavenge starts) and keeps it:
// the objects of every request then die in the old generation, each scavenge walks their
// pointers into the young one (30-50 ms pauses instead of 1-3), and the process serves 7-23 %
// less with twice the p99 for as long as it runs. Measured: 4 of 7 API processes fell into that
// state under the scale case, none of 15 with this flag (bench/RESULTS.md, "Young garbage
// pretenured"). The objects of a read die with its answer: nothing here gains from pretenuring.
export function keepRequestGarbageYoung(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}

/** How often the process looks whether it is at rest. */
const CHECK_MS = 10_000;
/**
 * At rest: the event loop busy under 5 % of the last check's interval. The API's own timers
 * (epoch watch, metrics) take about 1 % on a busy machine; a few reads a second stay under it.
 */
const IDLE_UTILIZATION = 0.05;
/** Heap grown since the last release (or the start) worth a collection to give back. */
const SLACK_BYTES = 32 * 2 ** 20;

type Gc = (options: { type: 'major'; execution: 'async'; flavor: 'last-resort' }) => Promise<void>;

// V8 shrinks its heap only in a memory-reducing major GC, and starts one only while JavaScript
// allocates: after a load ends nothing allocates, and the pages the load grew stay resident,
// even after an ordinary full GC (V8 keeps freed pages pooled for reuse). Measured after a 240 s
// fuzz-like load (issue 57 item 4, docs/reliability.md "Memory after load"): RSS 367 MiB at rest,
// 335 after an ordinary major GC, 191 after this one. So: one memory-reducing GC ("last-resort":
// it also empties the page pool) when the loop has been idle for a whole check and the heap has
// grown by more than SLACK_BYTES since the last one (garbage or free pages alike: at rest
// nothing collects either). Under load it never runs.
export function releaseHeapAtRest(logger: Pick<Logger, 'info'>, checkMs = CHECK_MS): () => void {
  // gc() without --expose-gc on the command line: the flag makes the next context carry it.
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as Gc;
  let last = performance.eventLoopUtilization();
  let floor = getHeapStatistics().total_heap_size;
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    const before = getHeapStatistics();
    if (busy >= IDLE_UTILIZATION || before.total_heap_size < floor + SLACK_BYTES) return;
    // Raised at once: a check while this collection runs does not start another.
    floor = before.total_heap_size;
    const started = performance.now();
    void gc({ type: 'major', execution: 'async', flavor: 'last-resort' }).then(() => {
      const after = getHeapStatistics();
      floor = after.total_heap_size;
      logger.info(
        {
          ms: Math.round(performance.now() - started),
          heapTotalBefore: before.total_heap_size,
          heapTotalAfter: after.total_heap_size,
        },
        'heap released at rest',
      );
    });
  }, checkMs);
  timer.unref();
  return () => clearInterval(timer);
}
