import { describe, expect, it } from 'vitest';
import { extractApiKey } from '../../api/auth/credential.js';
import { parseInstallationId, pickParam } from '../../api/params/installation-id.js';

describe('installationId', () => {
  it.each([
    ['42', 42],
    ['-7', -7],
    ['0042', 42],
    ['-0', 0],
    ['9007199254740991', 9007199254740991],
  ])('accepts %j', (value, id) => {
    expect(parseInstallationId({ installationId: value }, undefined)).toEqual({ ok: true, id });
  });

  it.each(['12.0', '1e3', '0x1A', ' 12', '12 ', '12abc', '', '+1', '-', '9007199254740992', '١٢'])(
    'rejects %j',
    (value) => {
      expect(parseInstallationId({ installationId: value }, undefined)).toEqual({
        ok: false,
        error: 'INVALID_PARAMETERS',
      });
    },
  );

  it('rejects a repeated value and answers MISSING when absent', () => {
    expect(parseInstallationId({ installationId: ['1', '1'] }, undefined).ok).toBe(false);
    expect(parseInstallationId({}, undefined)).toEqual({ ok: false, error: 'MISSING_PARAMETERS' });
    expect(parseInstallationId(undefined, {})).toEqual({ ok: false, error: 'MISSING_PARAMETERS' });
  });

  it('takes the body value over the query value', () => {
    expect(pickParam({ installationId: '1' }, { installationId: '2' }, 'installationId')).toBe('2');
    expect(pickParam({ installationId: '1' }, { other: '2' }, 'installationId')).toBe('1');
  });
});

describe('credential', () => {
  const key = `itk_${'a'.repeat(32)}`;
  it('prefers Bearer, any case, over Api-Key', () => {
    expect(extractApiKey({ authorization: `Bearer ${key}`, 'api-key': 'x' })).toBe(key);
    expect(extractApiKey({ authorization: `BEARER ${key}` })).toBe(key);
    expect(extractApiKey({ authorization: 'Bearer', 'api-key': key })).toBe('');
  });
  it('ignores other Authorization schemes', () => {
    expect(extractApiKey({ authorization: `Basic ${key}`, 'api-key': key })).toBe(key);
    expect(extractApiKey({ authorization: `Bearerx ${key}` })).toBeNull();
    expect(extractApiKey({})).toBeNull();
  });
});
