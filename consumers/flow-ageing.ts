import type { Logger } from 'pino';

// Time alone makes devices go offline: a timer has the owner of each telemetry partition
// recompute, from memory, every flow of its installations whose validUntil passed
// (TelemetryProjector.ageFlows), so the stored flow stops counting a device without any event
// arriving. No global schedule, no scan of Redis: each installation has one owner. The API
// still recomputes a flow read past its validity, whatever this timer's delay.

export interface FlowAgeing {
  stop(): Promise<void>;
}

export function startFlowAgeing(deps: {
  age: () => Promise<void>;
  intervalMs: number;
  logger: Logger;
}): FlowAgeing {
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  let sweeping: Promise<void> = Promise.resolve();
  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      // Redis failing: the next tick tries again; the flows stay due in memory.
      sweeping = deps
        .age()
        .catch((error) => deps.logger.warn({ err: error }, 'flow ageing failed; will retry'))
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
