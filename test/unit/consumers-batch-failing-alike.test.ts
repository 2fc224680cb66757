import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createBatchHandler } from '../../consumers/batch-handler.js';
import type { Rejection } from '../../consumers/dead-letter.js';
import type { KafkaBatch, KafkaMessage } from '../../consumers/kafka/client.js';
import { createConsumerMetrics } from '../../consumers/metrics.js';
import type { Projector } from '../../consumers/projector.js';

// Issue 37 (5): a failure that is no message's fault (every message of the batch fails alike, a
// Redis script error for instance) is not bisected into dead letters: the batch waits, and the
// process says so (metric, not ready), until the store accepts it again.

const TOPIC = 'access-changes.v1';
const message = (offset: number, key: string): KafkaMessage => ({
  topic: TOPIC,
  partition: 0,
  offset: String(offset),
  key: Buffer.from(key),
  value: Buffer.from('{}'),
  headers: {},
  timestampMs: Date.now(),
});
const batchOf = (keys: string[]): KafkaBatch => ({
  topic: TOPIC,
  partition: 0,
  messages: keys.map((k, i) => message(i, k)),
  highWatermark: String(keys.length),
});

function harness(project: Projector['project']) {
  const metrics = createConsumerMetrics();
  const dead: Rejection[] = [];
  const handle = createBatchHandler({
    topic: TOPIC,
    projector: { project },
    deadLetter: {
      async send(rejections) {
        dead.push(...rejections);
        return rejections.map((r) => r.reason);
      },
    },
    metrics,
    logger: pino({ level: 'silent' }),
    retry: { initialDelayMs: 1, maxDelayMs: 2 },
  });
  return { metrics, dead, handle };
}

const counted = async (metrics: ReturnType<typeof createConsumerMetrics>) =>
  (await metrics.systemicFailures.get()).values.reduce((sum, v) => sum + v.value, 0);

describe('a batch whose every message fails alike', () => {
  it('dead-letters nothing, counts it, and is not ready until the store accepts it', async () => {
    let failing = true;
    const attempts: number[] = [];
    const { metrics, dead, handle } = harness(async (batch) => {
      attempts.push(batch.messages.length);
      if (failing) throw new Error('ERR user_script:13: too many results to unpack');
      return { rejections: [] };
    });
    let beats = 0;
    const done = handle(batchOf(['grant:1:1', 'grant:1:2', 'grant:1:3', 'key:k9']), {
      async heartbeat() {
        // The store comes back after a few retries.
        if (++beats === 3) failing = false;
        if (beats === 2) expect(metrics.failingAlike.has(TOPIC)).toBe(true);
      },
      isStale: () => false,
    });
    await done;
    expect(dead).toEqual([]);
    expect(await counted(metrics)).toBeGreaterThanOrEqual(2);
    expect(metrics.failingAlike.size).toBe(0);
    // Bisected once to learn the failure; after that the whole batch is retried as one.
    const wholeAfterFirst = attempts.slice(attempts.lastIndexOf(1) + 1);
    expect(wholeAfterFirst.every((n) => n === 4)).toBe(true);
  });

  it('still isolates and dead-letters the one message at fault', async () => {
    const { metrics, dead, handle } = harness(async (batch) => {
      if (batch.messages.some((m) => m.key?.toString() === 'grant:1:2')) throw new Error('bad');
      return { rejections: [] };
    });
    await handle(batchOf(['grant:1:1', 'grant:1:2', 'grant:1:3']), {
      heartbeat: async () => {},
      isStale: () => false,
    });
    expect(dead.map((r) => r.message.key?.toString())).toEqual(['grant:1:2']);
    expect(await counted(metrics)).toBe(0);
  });

  it('dead-letters the events of one key that all fail alike (its own state is at fault)', async () => {
    const { dead, handle } = harness(async () => {
      throw new Error('stored devices of installation 42 are unreadable');
    });
    await handle(batchOf(['42', '42']), { heartbeat: async () => {}, isStale: () => false });
    expect(dead).toHaveLength(2);
  });
});
