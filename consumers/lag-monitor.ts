import type { Logger } from 'pino';
import type { Admin } from './kafka/client.js';
import type { ConsumerMetrics } from './metrics.js';

// Lag per partition, from the broker rather than from processed batches: the end is the last
// stable offset (what a read_committed consumer can reach, transaction markers included), the
// position is the group's committed offset. So lag shows from assignment on, before any batch,
// and keeps growing while a consumer is stalled or stopped. `ingest_consumer_lag` covers the
// partitions assigned to this process; `ingest_topic_lag` every partition of the topic, so a
// partition no member consumes is seen too.

const MIN_STALE_MS = 10_000;

export interface LaggingGroup {
  readonly topic: string;
  readonly groupId: string;
  assignment(): readonly number[];
}

export interface LagMonitor {
  /** Reads lag now (e.g. on assignment); overlapping calls share one read. */
  refresh(): Promise<void>;
  /**
   * Whether a read from the broker succeeded within the last three intervals (at least 10 s):
   * kafkajs waits out an unreachable broker without an error, so a consumer can look like a
   * member of its group while Kafka is gone; the lag read, on a timer, notices.
   */
  brokerAnswers(): boolean;
  stop(): void;
}

export function startLagMonitor(deps: {
  admin: Admin;
  groups: readonly LaggingGroup[];
  metrics: ConsumerMetrics;
  intervalMs: number;
  logger: Logger;
}): LagMonitor {
  const { admin, metrics } = deps;
  const shown = new Map<string, Set<number>>();
  let inFlight: Promise<void> | null = null;

  async function readGroup(group: LaggingGroup): Promise<void> {
    const partitions = group.assignment();
    const previous = shown.get(group.topic) ?? new Set<number>();
    for (const p of previous) {
      if (!partitions.includes(p)) metrics.lag.remove({ topic: group.topic, partition: String(p) });
    }
    shown.set(group.topic, new Set(partitions));
    // Every partition of the topic, assigned here or not: a partition the group has not taken
    // (added since the last rebalance) waits, and shows, only here.
    const [ends, committed] = await Promise.all([
      admin.endOffsets(group.topic),
      admin.committedOffsets(group.groupId, group.topic),
    ]);
    for (const end of ends) {
      const position = committed.find((c) => c.partition === end.partition)?.offset ?? end.start;
      const lag = BigInt(end.end) - BigInt(position);
      const labels = { topic: group.topic, partition: String(end.partition) };
      const value = Number(lag > 0n ? lag : 0n);
      metrics.topicLag.set(labels, value);
      if (partitions.includes(end.partition)) metrics.lag.set(labels, value);
    }
  }

  let answeredAt = Date.now();
  const staleAfterMs = Math.max(3 * deps.intervalMs, MIN_STALE_MS);
  const refresh = () => {
    inFlight ??= Promise.all(deps.groups.map(readGroup))
      .then(() => {
        answeredAt = Date.now();
      })
      .catch((error) => deps.logger.warn({ err: error }, 'could not read consumer lag'))
      .finally(() => {
        inFlight = null;
      });
    return inFlight;
  };
  const timer = setInterval(() => void refresh(), deps.intervalMs);
  timer.unref();
  return {
    refresh,
    brokerAnswers: () => Date.now() - answeredAt < staleAfterMs,
    stop: () => clearInterval(timer),
  };
}
