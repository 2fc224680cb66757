import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { Admin } from '../../consumers/kafka/client.js';
import { startLagMonitor } from '../../consumers/lag-monitor.js';
import { createConsumerMetrics } from '../../consumers/metrics.js';

// kafkajs waits out an unreachable broker without an error: a consumer keeps looking like a
// member of its group. Readiness then rests on the lag read, which stops answering.

function setup(reads: { hang: boolean }) {
  const never = new Promise<never>(() => {});
  const admin = {
    endOffsets: async () => (reads.hang ? never : [{ partition: 0, end: '5', start: '0' }]),
    committedOffsets: async () => (reads.hang ? never : [{ partition: 0, offset: '5' }]),
  } as unknown as Admin;
  return startLagMonitor({
    admin,
    groups: [{ topic: 't', groupId: 'g', assignment: () => [0] }],
    metrics: createConsumerMetrics(),
    intervalMs: 1_000,
    logger: pino({ level: 'silent' }),
  });
}

describe('lag monitor: does the broker answer', () => {
  it('says no once the reads have hung for three intervals (at least 10 s)', async () => {
    vi.useFakeTimers();
    const reads = { hang: false };
    const lag = setup(reads);
    try {
      await lag.refresh();
      expect(lag.brokerAnswers()).toBe(true);
      reads.hang = true;
      await vi.advanceTimersByTimeAsync(9_000);
      expect(lag.brokerAnswers()).toBe(true);
      await vi.advanceTimersByTimeAsync(2_000);
      expect(lag.brokerAnswers()).toBe(false);
    } finally {
      lag.stop();
      vi.useRealTimers();
    }
  });
});
