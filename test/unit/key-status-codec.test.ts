import { describe, expect, it } from 'vitest';
import {
  decodeKeyExpiry,
  encodeKeyExpiry,
  KEY_STATUS_VERSION,
} from '../../src/read-model/key-status-codec.js';

// The expiry of a key's status record (key-status-codec.ts): no instant may mean "never".
describe('key status expiry', () => {
  const epoch = Date.parse('1970-01-01T00:00:00Z');
  const before = Date.parse('1969-12-31T23:59:59Z');
  const after = Date.parse('1970-01-01T00:00:00.001Z');
  const instants = [
    epoch,
    before,
    after,
    -62_167_219_200_000,
    253_402_300_799_999,
    1_700_000_000_000,
  ];

  it('writes never as the empty string and every instant as its epoch ms', () => {
    expect(encodeKeyExpiry(null)).toBe('');
    expect(encodeKeyExpiry(epoch)).toBe('0');
    expect(encodeKeyExpiry(before)).toBe('-1000');
    expect(encodeKeyExpiry(after)).toBe('1');
  });

  it('reads back what it writes: never as null, the epoch and the instants before it as instants', () => {
    expect(decodeKeyExpiry(encodeKeyExpiry(null), KEY_STATUS_VERSION)).toBeNull();
    for (const ms of instants)
      expect(decodeKeyExpiry(encodeKeyExpiry(ms), KEY_STATUS_VERSION), String(ms)).toBe(ms);
  });

  it('reads a record written before format 2 as it was meant: exp 0 is never', () => {
    expect(decodeKeyExpiry('0', null)).toBeNull();
    expect(decodeKeyExpiry('-1000', null)).toBe(before);
    expect(decodeKeyExpiry('1700000000000', null)).toBe(1_700_000_000_000);
  });

  it('refuses (undefined) what it cannot place rather than read it as never', () => {
    for (const [exp, version] of [
      [null, KEY_STATUS_VERSION],
      [null, null],
      ['', null],
      ['abc', KEY_STATUS_VERSION],
      ['1e3', KEY_STATUS_VERSION],
      [' 1', KEY_STATUS_VERSION],
      ['1.5', null],
      ['Infinity', null],
      ['99999999999999999', KEY_STATUS_VERSION],
      ['0', '3'],
      ['', '3'],
    ] as const)
      expect(decodeKeyExpiry(exp, version), `${exp} v${version}`).toBeUndefined();
  });
});
