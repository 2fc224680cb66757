import { describe, expect, it } from 'vitest';
import { deadLetterHeaders } from '../../consumers/dead-letter.js';
import type { KafkaMessage } from '../../consumers/kafka/client.js';

const message = (headers: Record<string, Buffer | undefined> = {}): KafkaMessage => ({
  topic: 'device-telemetry.v1',
  partition: 3,
  offset: '42',
  key: Buffer.from('7'),
  value: Buffer.from('{oops'),
  headers,
  timestampMs: 0,
});

describe('deadLetterHeaders', () => {
  it('names the source, the machine-readable reason and a detail', () => {
    expect(
      deadLetterHeaders({ message: message(), reason: 'invalid_json', detail: 'bad' }),
    ).toEqual({
      'x-source-topic': 'device-telemetry.v1',
      'x-source-partition': '3',
      'x-source-offset': '42',
      'x-reason': 'invalid_json',
      'x-detail': 'bad',
    });
  });

  it('keeps the original headers but never lets them spoof ours', () => {
    const headers = deadLetterHeaders({
      message: message({ traceparent: Buffer.from('00-abc'), 'x-reason': Buffer.from('fake') }),
      reason: 'schema_violation',
      detail: 'd',
    });
    expect(headers.traceparent).toBe('00-abc');
    expect(headers['x-reason']).toBe('schema_violation');
  });

  it('bounds the detail', () => {
    const headers = deadLetterHeaders({
      message: message(),
      reason: 'invalid_json',
      detail: 'é'.repeat(5_000),
    });
    expect(Buffer.byteLength(headers['x-detail'] as string)).toBeLessThanOrEqual(500);
  });
});
