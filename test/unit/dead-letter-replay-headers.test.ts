import { describe, expect, it } from 'vitest';
import { deadLetterRecord, MAX_FORWARD_BYTES } from '../../consumers/dead-letter.js';
import type { KafkaMessage } from '../../consumers/kafka/client.js';

// A replayed message that fails again is dead-lettered with the tool's replay marker and count,
// whatever path it takes, so the next replay knows how often it was tried.

const replayed = (value: Buffer): KafkaMessage => ({
  topic: 'device-telemetry.v1',
  partition: 1,
  offset: '9',
  key: Buffer.from('42'),
  value,
  headers: {
    'x-replay-of': Buffer.from('ingest-deadletter.v1:0:5'),
    'x-replay-count': Buffer.from('2'),
    traceparent: Buffer.from('00-abc'),
  },
  timestampMs: 0,
});

describe('a replay dead-lettered again', () => {
  it('keeps the replay marker and count beside the new source headers', () => {
    const { outgoing } = deadLetterRecord({
      message: replayed(Buffer.from('{}')),
      reason: 'unknown_event_type',
      detail: 'd',
    });
    expect(outgoing.headers).toMatchObject({
      'x-replay-of': 'ingest-deadletter.v1:0:5',
      'x-replay-count': '2',
      'x-source-offset': '9',
      'x-reason': 'unknown_event_type',
    });
  });

  it('keeps them when the message goes as headers only (too_large)', () => {
    const { outgoing, reason } = deadLetterRecord({
      message: replayed(Buffer.alloc(MAX_FORWARD_BYTES + 1)),
      reason: 'schema_violation',
      detail: 'd',
    });
    expect(reason).toBe('too_large');
    expect(outgoing.value).toBeNull();
    expect(outgoing.headers).toMatchObject({
      'x-replay-count': '2',
      'x-replay-of': 'ingest-deadletter.v1:0:5',
    });
    expect(outgoing.headers).not.toHaveProperty('traceparent');
  });
});
