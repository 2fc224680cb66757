import { describe, expect, it } from 'vitest';
import {
  deadLetterHeaders,
  deadLetterRecord,
  MAX_FORWARD_BYTES,
} from '../../consumers/dead-letter.js';
import type { KafkaMessage } from '../../consumers/kafka/client.js';
import { MAX_REQUEST_BYTES, requestChunks } from '../../consumers/kafka/kafkajs-client.js';
import { ContentionError, isRetriable } from '../../consumers/retriable.js';
import { BatchAbandonedError } from '../../consumers/retry.js';

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

describe('deadLetterRecord', () => {
  it('forwards the original key, value and headers when they fit', () => {
    const r = deadLetterRecord({ message: message(), reason: 'invalid_json', detail: 'd' });
    expect(r.reason).toBe('invalid_json');
    expect(r.outgoing.value?.toString()).toBe('{oops');
    expect(r.outgoing.key?.toString()).toBe('7');
  });

  it('sends a message too large to forward with headers only, reason too_large', () => {
    const big = {
      ...message({ traceparent: Buffer.from('00-abc') }),
      value: Buffer.alloc(MAX_FORWARD_BYTES, 'a'),
    };
    const r = deadLetterRecord({ message: big, reason: 'schema_violation', detail: 'soe: bad' });
    expect(r.reason).toBe('too_large');
    expect(r.outgoing.value).toBeNull();
    expect(r.outgoing.key?.toString()).toBe('7');
    expect(r.outgoing.headers?.['x-reason']).toBe('too_large');
    expect(r.outgoing.headers?.['x-source-offset']).toBe('42');
    expect(r.outgoing.headers?.['x-detail']).toContain('was schema_violation: soe: bad');
    expect(r.outgoing.headers).not.toHaveProperty('traceparent');
  });
});

describe('requestChunks', () => {
  it('splits in order into requests of bounded size, a larger message alone', () => {
    const m = (bytes: number) => ({ key: 'k', value: 'v'.repeat(bytes) });
    const chunks = requestChunks([m(300_000), m(300_000), m(100), m(600_000), m(10)]);
    expect(chunks.map((c) => c.length)).toEqual([1, 2, 1, 1]);
    for (const c of chunks.filter((c) => c.length > 1)) {
      const size = c.reduce((a, x) => a + String(x.value).length + 1, 0);
      expect(size).toBeLessThanOrEqual(MAX_REQUEST_BYTES);
    }
    expect(requestChunks([])).toEqual([]);
  });
});

describe('isRetriable', () => {
  it('retries outages, contention and retriable kafkajs errors only', () => {
    const named = (name: string, msg = 'x') => Object.assign(new Error(msg), { name });
    expect(isRetriable(named('MaxRetriesPerRequestError'))).toBe(true);
    expect(isRetriable(new Error('Connection is closed.'))).toBe(true);
    expect(isRetriable(Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }))).toBe(true);
    expect(isRetriable(named('ReplyError', 'LOADING Redis is loading'))).toBe(true);
    expect(isRetriable(new ContentionError('busy'))).toBe(true);
    expect(isRetriable(new BatchAbandonedError('revoked'))).toBe(true);
    expect(isRetriable(Object.assign(new Error('leader'), { retriable: true }))).toBe(true);
    expect(isRetriable(named('ReplyError', 'WRONGTYPE Operation against a key'))).toBe(false);
    expect(isRetriable(Object.assign(new Error('too large'), { retriable: false }))).toBe(false);
    expect(isRetriable(new SyntaxError('Unexpected token'))).toBe(false);
    expect(isRetriable(new TypeError('x is undefined'))).toBe(false);
  });
});
