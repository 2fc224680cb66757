import { describe, expect, it } from 'vitest';
import {
  installationsOf,
  matches,
  printableHeaders,
  printablePayload,
  toDeadLetter,
} from '../../tools/dead-letters/dead-letter-view.js';

// What the dead-letter tool prints and selects, without Kafka.

const letter = (key: string | null, value: unknown, reason = 'schema_violation') =>
  toDeadLetter('dlq', 0, {
    key: key === null ? null : Buffer.from(key),
    value:
      value === null
        ? null
        : Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)),
    offset: '5',
    timestamp: '1709287200000',
    attributes: 0,

    headers: {
      'x-source-topic': 'access-changes.v1',
      'x-source-partition': '1',
      'x-source-offset': '9',
      'x-reason': reason,
      'x-replay-count': '2',
    },
  });

describe('dead-letter view', () => {
  it('reads the source, reason and replay count from the headers', () => {
    const d = letter('42', {});
    expect(d.id).toBe('dlq:0:5');
    expect(d.source).toEqual({ topic: 'access-changes.v1', partition: 1, offset: '9' });
    expect(d.replayCount).toBe(2);
  });

  it('finds the installation in the key or the payload', () => {
    expect(installationsOf(letter('grant:17:42', null))).toEqual([42]);
    expect(installationsOf(letter('x', { installation: { id: 7 } }))).toEqual([7]);
    expect(
      matches(letter('member:5:42', null), { installation: 42, reason: 'schema_violation' }),
    ).toBe(true);
    expect(matches(letter('42', {}), { sinceMs: 1709287200001 })).toBe(false);
  });

  it('masks key hashes, API keys and secret-named fields, in JSON or not', () => {
    const key = `itk_${'x'.repeat(40)}`;
    expect(
      printablePayload(
        Buffer.from(JSON.stringify({ keyHash: 'a'.repeat(64), n: `k ${key}`, token: 't' })),
      ),
    ).toEqual({
      keyHash: '[redacted]',
      n: 'k [redacted]',
      token: '[redacted]',
    });
    expect(printablePayload(Buffer.from(`{broken ${key} ${'b'.repeat(64)}`))).toBe(
      '{broken [redacted] [redacted]',
    );
  });
});

describe("the producer's headers", () => {
  const withHeaders = (extra: Record<string, Buffer | string>) =>
    toDeadLetter('dlq', 0, {
      key: Buffer.from('42'),
      value: null,
      offset: '5',
      timestamp: '1709287200000',
      attributes: 0,
      headers: { 'x-source-topic': 't', 'x-reason': 'too_large', 'x-detail': 'd', ...extra },
    });

  it('are printed as text, without the dead-letter headers, credentials masked', () => {
    const d = withHeaders({
      traceparent: '00-abc-def-01',
      'content-type': Buffer.from('application/json'),
      Authorization: 'Bearer x',
      'x-auth-token': 't',
      note: `key itk_${'a'.repeat(40)} here`,
    });
    expect(printableHeaders(d.producerHeaders)).toEqual({
      traceparent: '00-abc-def-01',
      'content-type': 'application/json',
      Authorization: '[redacted]',
      'x-auth-token': '[redacted]',
      note: 'key [redacted] here',
    });
  });

  it('are given by size where they are not text, and kept byte for byte for a replay', () => {
    const bytes = Buffer.from([0x00, 0xff, 0x10, 0x80]);
    const d = withHeaders({ 'x-binary': bytes });
    expect(printableHeaders(d.producerHeaders)).toEqual({ 'x-binary': '[4 bytes, not text]' });
    expect(d.producerHeaders['x-binary']).toEqual(bytes);
  });
});
