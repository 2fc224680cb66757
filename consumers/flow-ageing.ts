import type { Logger } from 'pino';
import type { FlowStore } from '../src/read-model/flow-store.js';
import type { ConsumerMetrics } from './metrics.js';

// Time alone makes devices go offline: a timer recomputes every flow whose validUntil passed,
// so the stored flow stops counting a device without any event arriving.

export interface FlowAgeing {
  stop(): Promise<void>;
}

const PER_SWEEP = 200;

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

  async function sweep(): Promise<void> {
    const now = deps.clock();
    const due = await deps.store.due(now, PER_SWEEP);
    for (const id of due) {
      if (stopped) return;
      if (await deps.store.refresh(id, now)) deps.metrics.flowRefreshes.inc({ trigger: 'ageing' });
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
