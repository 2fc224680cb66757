import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// Offsets are committed once Redis acknowledged the batch: the acknowledged write must already
// be on disk (docs/operations.md, Durability). Redis 7.0 has no WAITAOF, so both ways of
// starting Redis must fsync the AOF on every write.

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('Redis durability settings', () => {
  it('infra/stack.sh starts Redis with the AOF fsynced on every write', () => {
    const script = read('infra/stack.sh');
    expect(script).toMatch(/--appendonly yes --appendfsync always/);
    expect(script).not.toMatch(/appendfsync everysec/);
  });

  it('docker-compose.yml does the same', () => {
    const compose = read('docker-compose.yml');
    expect(compose).toMatch(/--appendonly, 'yes', --appendfsync, always\]/);
    expect(compose).not.toMatch(/everysec/);
  });
});
