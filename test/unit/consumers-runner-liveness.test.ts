import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { ConsumerEvents, ConsumerOptions, KafkaClient } from '../../consumers/kafka/client.js';
import type { ConsumerFailure } from '../../consumers/liveness.js';
import { partitionsHolding } from '../../consumers/liveness.js';
import { createConsumerMetrics } from '../../consumers/metrics.js';
import { createTopicRunner } from '../../consumers/runner.js';

// The runner's side of "never silently": what the client reports about its own life becomes
// readiness and, for good stops, one failure. The client here is a stand-in that only emits
// those reports; Kafka itself is exercised in test/integration/consumers-liveness.test.ts.

function setup(rejoinTimeoutMs = 1_000) {
  let events: ConsumerEvents | undefined;
  const kafka = {
    createConsumer: (options: ConsumerOptions) => {
      events = options.events;
      return { start: async () => events?.onAssigned([0, 1]), stop: async () => {}, pause() {} };
    },
  } as unknown as KafkaClient;
  const failures: ConsumerFailure[] = [];
  const metrics = createConsumerMetrics();
  const runner = createTopicRunner({
    kafka,
    admin: {} as never,
    topic: 't',
    groupId: 'g',
    projector: { project: async () => ({ rejections: [] }) },
    deadLetter: { send: async () => [] },
    metrics,
    logger: pino({ level: 'silent' }),
    retry: { initialDelayMs: 1, maxDelayMs: 1 },
    rejoinTimeoutMs,
    onFailure: (f) => failures.push(f),
  });
  const emit = () => events as ConsumerEvents;
  const failureCount = async (reason: string) =>
    (await metrics.consumerFailures.get()).values.find((v) => v.labels.reason === reason)?.value ??
    0;
  return { runner, failures, emit, failureCount };
}

describe('topic runner liveness', () => {
  it('is running once assigned, and fails at once on a crash the client will not restart', async () => {
    const { runner, failures, emit, failureCount } = setup();
    await runner.start();
    expect(runner.isRunning()).toBe(true);
    expect(runner.assignment()).toEqual([0, 1]);
    emit().onStopped();
    emit().onCrash(new Error('boom'), false);
    expect(runner.isRunning()).toBe(false);
    expect(failures).toMatchObject([{ topic: 't', reason: 'crash', partitions: [0, 1] }]);
    expect(await failureCount('crash')).toBe(1);
    emit().onAssigned([0]);
    expect(runner.isRunning()).toBe(false);
  });

  it('waits for a restarted consumer to rejoin, and fails when it does not', async () => {
    vi.useFakeTimers();
    try {
      const { runner, failures, emit, failureCount } = setup(1_000);
      await runner.start();
      emit().onCrash(new Error('broker gone'), true);
      expect(runner.isRunning()).toBe(false);
      vi.advanceTimersByTime(900);
      emit().onAssigned([0, 1]);
      expect(runner.isRunning()).toBe(true);
      vi.advanceTimersByTime(5_000);
      expect(failures).toEqual([]);
      emit().onCrash(new Error('broker gone again'), true);
      vi.advanceTimersByTime(1_000);
      expect(failures).toMatchObject([{ reason: 'group_lost' }]);
      expect(await failureCount('crash_restarted')).toBe(2);
    } finally {
      vi.useRealTimers();
    }
  });

  it('is not ready while it rejoins its group, and does not fail for it', async () => {
    vi.useFakeTimers();
    try {
      const { runner, failures, emit } = setup(1_000);
      await runner.start();
      emit().onRejoining();
      expect(runner.isRunning()).toBe(false);
      vi.advanceTimersByTime(5_000);
      expect(failures).toEqual([]);
      emit().onAssigned([1]);
      expect(runner.isRunning()).toBe(true);
      expect(runner.assignment()).toEqual([1]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('does not report a stop it was asked for', async () => {
    const { runner, failures, emit } = setup();
    await runner.start();
    await runner.stop();
    emit().onCrash(new Error('during stop'), false);
    expect(failures).toEqual([]);
  });
});

describe('placing an undecodable batch', () => {
  it('names the partitions whose unread range holds the batch', () => {
    const positions = [
      { partition: 0, committed: '1', end: '4' },
      { partition: 1, committed: '0', end: '0' },
      { partition: 2, committed: '7', end: '9' },
    ];
    expect(partitionsHolding(positions, '1', '2')).toEqual([0]);
    expect(partitionsHolding(positions, '7', '8')).toEqual([2]);
  });
});
