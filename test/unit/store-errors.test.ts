import { describe, expect, it } from 'vitest';
import { isStoreUnavailable } from '../../src/read-model/store-errors.js';

const named = (name: string, msg = 'x') => Object.assign(new Error(msg), { name });
const coded = (code: string) => Object.assign(new Error('socket'), { code });

describe('isStoreUnavailable', () => {
  it('knows an unreachable, slow or busy store', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH'])
      expect(isStoreUnavailable(coded(code)), code).toBe(true);
    expect(isStoreUnavailable(named('MaxRetriesPerRequestError'))).toBe(true);
    expect(isStoreUnavailable(named('AbortError'))).toBe(true);
    expect(isStoreUnavailable(new Error('Connection is closed.'))).toBe(true);
    expect(isStoreUnavailable(new Error("Stream isn't writeable"))).toBe(true);
    expect(isStoreUnavailable(new Error('Command timed out'))).toBe(true);
    for (const reply of ['LOADING Redis is loading', 'BUSY Redis is busy', 'READONLY replica'])
      expect(isStoreUnavailable(named('ReplyError', reply)), reply).toBe(true);
  });

  it('leaves a wrong command, a script error or bad bytes alone', () => {
    expect(isStoreUnavailable(named('ReplyError', 'WRONGTYPE Operation against a key'))).toBe(
      false,
    );
    expect(isStoreUnavailable(named('ReplyError', 'ERR Error running script'))).toBe(false);
    expect(isStoreUnavailable(new SyntaxError('Unexpected token'))).toBe(false);
    // A server state is a reply's: the same words in another error are not one.
    expect(isStoreUnavailable(new Error('LOADING'))).toBe(false);
    expect(isStoreUnavailable(null)).toBe(false);
    expect(isStoreUnavailable('ECONNREFUSED')).toBe(false);
  });
});
