import { describe, expect, it } from 'vitest';
import { formatDateTime, parseDateTime } from '../../src/domain/date-time.js';

describe('parseDateTime', () => {
  it('reads Z and numeric offsets to the same instant', () => {
    const z = parseDateTime('2024-03-01T10:00:00Z');
    expect(z).toBe(Date.UTC(2024, 2, 1, 10));
    expect(parseDateTime('2024-03-01T12:00:00+02:00')).toBe(z);
    expect(parseDateTime('2024-03-01T05:30:00-04:30')).toBe(z);
  });

  it('keeps milliseconds and truncates finer fractions', () => {
    expect(parseDateTime('2024-03-01T10:00:00.5Z')).toBe(Date.UTC(2024, 2, 1, 10, 0, 0, 500));
    expect(parseDateTime('2024-03-01T10:00:00.123987Z')).toBe(Date.UTC(2024, 2, 1, 10, 0, 0, 123));
  });

  it.each([
    '2024-03-01T10:00:00',
    '2024-03-01 10:00:00Z',
    '2024-03-01T10:00:00+0200',
    '2024-03-01T10:00:00+02',
    '2024-02-30T10:00:00Z',
    '2023-02-29T10:00:00Z',
    '2024-13-01T10:00:00Z',
    '2024-03-01T24:00:00Z',
    '2024-03-01T10:60:00Z',
    '2024-03-01T10:00:60Z',
    '2024-03-01T10:00:00+24:00',
    '2024-03-01',
    '',
  ])('rejects %j', (s) => {
    expect(parseDateTime(s)).toBeNull();
  });

  it('accepts 29 February in a leap year and years below 100 literally', () => {
    expect(parseDateTime('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29));
    expect(new Date(parseDateTime('0050-01-01T00:00:00Z') as number).getUTCFullYear()).toBe(50);
  });
});

describe('formatDateTime', () => {
  it('writes UTC with an explicit +00:00 offset, whole seconds', () => {
    expect(formatDateTime(Date.UTC(2024, 2, 1, 10, 5, 7, 999))).toBe('2024-03-01T10:05:07+00:00');
  });

  it('round-trips a non-UTC offset to UTC', () => {
    const ms = parseDateTime('2024-03-01T01:00:00+02:00') as number;
    expect(formatDateTime(ms)).toBe('2024-02-29T23:00:00+00:00');
  });
});
