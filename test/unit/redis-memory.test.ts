import { describe, expect, it } from 'vitest';
import { parseInfoMemory } from '../../src/ops/redis-memory.js';

// INFO memory as Redis writes it (CRLF lines), read for the memory alert.
describe('parseInfoMemory', () => {
  it('reads used_memory and maxmemory, not the fields that start the same', () => {
    const info = [
      '# Memory',
      'used_memory:1895744',
      'used_memory_human:1.81M',
      'used_memory_rss:9000000',
      'maxmemory:4294967296',
      'maxmemory_human:4.00G',
      'maxmemory_policy:noeviction',
      '',
    ].join('\r\n');
    expect(parseInfoMemory(info)).toEqual({ usedBytes: 1895744, maxBytes: 4294967296 });
  });

  it('gives null when a field is missing', () => {
    expect(parseInfoMemory('# Memory\r\nused_memory:10\r\n')).toBeNull();
  });
});
