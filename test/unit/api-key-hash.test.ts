import { describe, expect, it } from 'vitest';
import { keyHashOf } from '../../api/auth/authenticate.js';
import { hashApiKey } from '../../src/domain/access-rule.js';

// The key hash of a request (api/auth/authenticate.ts): remembered keys skip the format check,
// which must not let a malformed key through, first time or any later time.
describe('keyHashOf', () => {
  const key = `itk_${'a1B2'.repeat(10)}`;

  it('hashes a well-formed key, the same when it is remembered', () => {
    expect(keyHashOf({ 'api-key': key })).toBe(hashApiKey(key));
    expect(keyHashOf({ 'api-key': key })).toBe(hashApiKey(key));
    expect(keyHashOf({ authorization: `Bearer ${key}` })).toBe(hashApiKey(key));
  });

  it('refuses malformed keys every time, none ever remembered', () => {
    for (const bad of [
      'itk_short',
      `${key}!`,
      `xtk_${key.slice(4)}`,
      '',
      `itk_${'a'.repeat(65)}`,
    ]) {
      expect(keyHashOf({ 'api-key': bad }), bad).toBeNull();
      expect(keyHashOf({ 'api-key': bad }), bad).toBeNull();
    }
    expect(keyHashOf({})).toBeNull();
    expect(keyHashOf({ authorization: 'Bearer ' })).toBeNull();
  });
});
