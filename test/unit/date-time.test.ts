import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { formatDateTime, parseDateTime } from '../../src/domain/date-time.js';

// The parser as it was written with a regular expression, kept as the oracle the hand-written
// one must agree with on every text.
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:(Z)|([+-])(\d{2}):(\d{2}))$/;
function oracle(value: string): number | null {
  const m = RFC3339.exec(value);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, zulu, sign, oh, om] = m;
  const [year, month, day] = [Number(y), Number(mo), Number(d)];
  const [hour, minute, second] = [Number(h), Number(mi), Number(s)];
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] ?? 0;
  if (month < 1 || month > 12 || day < 1 || day > days) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offset = 0;
  if (!zulu) {
    if (Number(oh) > 23 || Number(om) > 59) return null;
    offset = (sign === '-' ? -1 : 1) * (Number(oh) * 60 + Number(om));
  }
  const ms = frac ? Number(frac.slice(0, 3).padEnd(3, '0')) : 0;
  const local = new Date(0).setUTCFullYear(year, month - 1, day);
  const result = local + ((hour * 60 + minute - offset) * 60 + second) * 1000 + ms;
  const first = new Date(0).setUTCFullYear(0, 0, 1);
  const last = new Date(0).setUTCFullYear(9999, 11, 31) + 86_399_999;
  return result < first || result > last ? null : result;
}

const pad = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, '0'));
/** Texts of the grammar's shape, each part in range or just past it (month 13, hour 24). */
const nearDateTimes = fc
  .tuple(
    fc.integer({ min: 0, max: 9999 }).map((n) => String(n).padStart(4, '0')),
    fc.tuple(pad(13), pad(32), pad(24), pad(60), pad(60)),
    fc.option(fc.stringMatching(/^[0-9]{1,7}$/), { nil: undefined }),
    fc.oneof(fc.constant('Z'), fc.tuple(fc.constantFrom('+', '-'), pad(24), pad(60))),
  )
  .map(([y, [mo, d, h, mi, s], frac, off]) => {
    const offset = typeof off === 'string' ? off : `${off[0]}${off[1]}:${off[2]}`;
    return `${y}-${mo}-${d}T${h}:${mi}:${s}${frac === undefined ? '' : `.${frac}`}${offset}`;
  });

/** Every text one character away from `text`: each replaced, dropped, or inserted. */
function neighbours(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i <= text.length; i++)
    for (const ch of ['', '0', '9', '-', ':', '.', 'T', 'Z', 'z', 't', ' ', '+', '\u0663']) {
      out.push(text.slice(0, i) + ch + text.slice(i + 1));
      out.push(text.slice(0, i) + ch + text.slice(i));
    }
  return out;
}

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
    '2024-03-01t10:00:00Z',
    '2024-03-01T10:00:00z',
    '2024-03-01T10:00:00.Z',
    '',
  ])('rejects %j', (s) => {
    expect(parseDateTime(s)).toBeNull();
  });

  it('agrees with the regular-expression parser on texts of its shape and their neighbours', () => {
    fc.assert(
      fc.property(nearDateTimes, (text) => {
        // One assertion per text: the texts that disagree (~700 checked each).
        const disagree = [text, ...neighbours(text)].filter((t) => parseDateTime(t) !== oracle(t));
        expect(disagree).toEqual([]);
      }),
      { numRuns: 300 },
    );
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
