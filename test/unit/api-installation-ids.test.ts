import { describe, expect, it } from 'vitest';
import { parseIntegerParam } from '../../api/params/installation-id.js';
import { parseInstallationIds } from '../../api/params/installation-ids.js';

// The bulk endpoint's ids are scanned by character for speed; the rule they must keep is the
// plain one below (beyond.md §4): split on commas, each item installationId's syntax, 1 to 100
// distinct by value, answered ascending.
function reference(value: unknown) {
  if (value === undefined) return { ok: false, error: 'MISSING_PARAMETERS' };
  if (typeof value !== 'string') return { ok: false, error: 'INVALID_PARAMETERS' };
  const items = value.split(',');
  if (items.length > 100) return { ok: false, error: 'INVALID_PARAMETERS' };
  const ids = new Set<number>();
  for (const item of items) {
    const id = parseIntegerParam(item);
    if (!id.ok || ids.has(id.id)) return { ok: false, error: 'INVALID_PARAMETERS' };
    ids.add(id.id);
  }
  return { ok: true, ids: [...ids].sort((a, b) => a - b) };
}

/** The result without `text` (checked once below), to compare with the plain rule. */
const parse = (value: unknown) => {
  const result = parseInstallationIds({ installationIds: value }, undefined);
  return result.ok ? { ok: true, ids: result.ids } : result;
};

describe('installationIds', () => {
  it.each([
    ['1,2,3', [1, 2, 3]],
    ['3,1,2', [1, 2, 3]],
    ['-5,0', [-5, 0]],
    ['007,-3', [-3, 7]],
    ['9007199254740991,-9007199254740991', [-9007199254740991, 9007199254740991]],
    ['123456789012345,1234567890123456', [123456789012345, 1234567890123456]],
  ])('accepts %j', (value, ids) => {
    expect(parse(value)).toEqual({ ok: true, ids });
  });

  it.each([
    '',
    ',',
    '1,',
    ',1',
    '1,,2',
    '1,1',
    '1,01',
    '2,1,2',
    '-0,0',
    '-',
    '1,-',
    '+1',
    ' 1',
    '1 ',
    '1.0',
    '9007199254740992',
    '1,00000000000000009007199254740992',
    '١',
  ])('rejects %j', (value) => {
    expect(parse(value)).toEqual({ ok: false, error: 'INVALID_PARAMETERS' });
  });

  it('takes 100 ids and refuses 101, whatever their order', () => {
    const hundred = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(parse(hundred.join(','))).toEqual({ ok: true, ids: [...hundred].reverse() });
    expect(parse([...hundred, 101].join(',')).ok).toBe(false);
    expect(parse([101, ...hundred].join(',')).ok).toBe(false);
  });

  it('answers as the plain rule does on random lists', () => {
    const pieces = ['0', '1', '2', '7', '9', '00', '-', ',', ',', ',', 'a', ' ', '.', '99999999'];
    let seed = 15;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let n = 0; n < 20_000; n++) {
      let value = '';
      const length = random(24);
      for (let i = 0; i < length; i++) value += pieces[random(pieces.length)];
      expect(parse(value), value).toEqual(reference(value));
    }
  });

  it('answers the text as sent with the ids', () => {
    expect(parseInstallationIds({ installationIds: '3,01' }, undefined)).toEqual({
      ok: true,
      ids: [1, 3],
      text: '3,01',
    });
  });

  it('answers MISSING when absent and INVALID when repeated', () => {
    expect(parseInstallationIds({}, undefined)).toEqual(reference(undefined));
    expect(parse(['1', '2'])).toEqual(reference(['1', '2']));
  });
});
