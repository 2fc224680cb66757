import type { Logger } from 'pino';
import type { FlowStore } from '../src/read-model/flow-store.js';
import type { ConsumerMetrics } from './metrics.js';
import { isRetriable } from './retriable.js';

// Time alone makes devices go offline: a timer recomputes every flow whose validUntil passed,
// so the stored flow stops counting a device without any event arriving. Every consumer process
// sweeps; claims with a lease keep them from doing the same work. One installation that cannot
// be recomputed is postponed with a growing backoff and never holds back the others.

export interface FlowAgeing {
  stop(): Promise<void>;
}

const PER_SWEEP = 200;
const LEASE_MS = 60_000;
const MAX_BACKOFF_MS = 3_600_000;

export function startFlowAgeing(deps: {
  store: FlowStore;
  clock: () => number;
  intervalMs: number;
  metrics: ConsumerMetrics;
  logger: Logger;
}): FlowAgeing {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let sweeping: Promise<void> = Promise.resolve();
  /** Consecutive failures per installation, for the backoff; forgotten on success. */
  const failures = new Map<number, number>();

  async function refreshOne(id: number, now: number): Promise<void> {
    try {
      if (await deps.store.refresh(id, now)) deps.metrics.flowRefreshes.inc({ trigger: 'ageing' });
      failures.delete(id);
    } catch (error) {
      // Redis itself is failing: end the sweep; the leases bring the claims back later.
      if (isRetriable(error)) throw error;
      const count = (failures.get(id) ?? 0) + 1;
      failures.set(id, count);
      const backoffMs = Math.min(MAX_BACKOFF_MS, deps.intervalMs * 2 ** Math.min(count, 24));
      deps.metrics.flowRefreshFailures.inc();
      deps.logger.error(
        { err: error, installationId: id, failures: count, backoffMs },
        'flow recomputation failed; postponed',
      );
      await deps.store.postpone(id, now + backoffMs);
    }
  }

  async function sweep(): Promise<void> {
    const now = deps.clock();
    const due = await deps.store.claimDue(now, now + LEASE_MS, PER_SWEEP);
    for (const id of due) {
      if (stopped) return;
      await refreshOne(id, now);
    }
  }

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      sweeping = sweep()
        .catch((error) => deps.logger.warn({ err: error }, 'flow ageing sweep failed; will retry'))
        .finally(schedule);
    }, deps.intervalMs);
  };
  schedule();

  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await sweeping;
    },
  };
}
