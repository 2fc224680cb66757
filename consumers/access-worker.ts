import type { Logger } from 'pino';
import type { AccessWork, WorkPlace } from '../src/read-model/access-store.js';
import type { ConsumerMetrics } from './metrics.js';
import type { Projector } from './projector.js';

// Derives the access entries that the batches of this process's partitions recorded
// (src/read-model/access-store.ts), one chunk per application in turn, behind the batches: a
// large application's build or owner change never holds up another application's facts, and a
// key's revocation (a status, written by its batch) never waits for any of it. Work recorded
// under a partition is resumed by whoever owns it next, after a crash or a rebalance.

export interface AccessWorker {
  /** The partitions of `topic` this process owns now; their recorded work is taken up. */
  assigned(topic: string, partitions: readonly number[]): void;
  /** A batch recorded work. */
  kick(): void;
  /** `projector` whose batches go first: while one runs, the worker waits (a while at most). */
  yieldingTo(projector: Projector): Projector;
  stop(): Promise<void>;
}

// Work recorded by a former owner is found within this, even without a kick.
const IDLE_POLL_MS = 1_000;
// While batches run the worker waits up to this per chunk: a burst of facts (a revocation
// among them) gets the core first, and derivation still advances under a steady stream.
const MAX_YIELD_MS = 100;
const YIELD_POLL_MS = 5;

export function createAccessWorker(deps: {
  work: AccessWork;
  metrics: ConsumerMetrics;
  logger: Logger;
  /** Longest wait between tries while Redis fails. */
  maxRetryDelayMs: number;
}): AccessWorker {
  const places = new Map<string, readonly number[]>();
  let stopped = false;
  let wake: (() => void) | null = null;
  let kicked = false;
  let batchesRunning = 0;

  async function afterBatches(): Promise<void> {
    const until = performance.now() + MAX_YIELD_MS;
    while (batchesRunning > 0 && !stopped && performance.now() < until)
      await new Promise((resolve) => setTimeout(resolve, YIELD_POLL_MS));
  }

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      if (kicked) {
        kicked = false;
        resolve();
        return;
      }
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = null;
        resolve();
      }
      wake = done;
    });

  const loop = (async () => {
    let delayMs = 100;
    while (!stopped) {
      const list: WorkPlace[] = [];
      for (const [topic, partitions] of places)
        for (const partition of partitions) list.push({ topic, partition });
      try {
        await afterBatches();
        const derived = await deps.work.workOnce(list);
        deps.metrics.accessEntriesDerived.inc(derived);
        delayMs = 100;
        if (derived === 0) await sleep(IDLE_POLL_MS);
      } catch (error) {
        deps.logger.warn({ err: error }, 'access work failed; trying again');
        await sleep(delayMs);
        delayMs = Math.min(delayMs * 2, deps.maxRetryDelayMs);
      }
    }
  })();

  return {
    assigned(topic, partitions) {
      places.set(topic, [...partitions]);
      this.kick();
    },
    kick() {
      if (wake) wake();
      else kicked = true;
    },
    yieldingTo(projector) {
      return {
        async project(batch) {
          batchesRunning++;
          try {
            return await projector.project(batch);
          } finally {
            batchesRunning--;
          }
        },
      };
    },
    async stop() {
      stopped = true;
      wake?.();
      await loop;
    },
  };
}
