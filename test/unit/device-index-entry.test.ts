import { describe, expect, it } from 'vitest';
import {
  claimedEntry,
  decodeIndexEntry,
  encodeIndexEntry,
} from '../../src/read-model/device-index-entry.js';

describe('device index entry', () => {
  it('reads back what it writes, with empty fields for none', () => {
    const entries = [
      { inst: 12, lastMs: 1_732_550_000_123, prev: null, removedMs: null },
      { inst: null, lastMs: 1_732_550_000_000, prev: 7, removedMs: 1_732_550_001_000 },
      { inst: null, lastMs: null, prev: null, removedMs: null },
    ];
    for (const entry of entries) expect(decodeIndexEntry(encodeIndexEntry(entry))).toEqual(entry);
    expect(encodeIndexEntry(entries[0] as (typeof entries)[0])).toBe('12;1732550000123;;');
  });

  it('writes a first claim as the entry of a device with no earlier owner nor removal', () => {
    const op = { kind: 'claim', inst: 42, atMs: 1_732_550_000_123 } as const;
    expect(decodeIndexEntry(claimedEntry(op))).toEqual({
      inst: 42,
      lastMs: 1_732_550_000_123,
      prev: null,
      removedMs: null,
    });
  });

  it('is null for a missing key and refuses text that is not an entry', () => {
    expect(decodeIndexEntry(null)).toBeNull();
    expect(() => decodeIndexEntry('12;3')).toThrow(/four fields/);
  });
});
