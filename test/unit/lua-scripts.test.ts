import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadScript } from '../../src/read-model/lua-scripts.js';

function scriptDir(files: Record<string, string>): URL {
  const dir = mkdtempSync(join(tmpdir(), 'lua-'));
  mkdirSync(join(dir, 'includes'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return pathToFileURL(`${dir}/`);
}

describe('loadScript', () => {
  it('takes the number of keys from the file name and inlines includes', () => {
    const dir = scriptDir({
      'read-thing-2.lua': "-- header\n-- @include guard\nreturn redis.call('GET', KEYS[2])\n",
      'includes/guard.lua': "if redis.call('EXISTS', KEYS[1]) == 0 then return nil end\n",
    });
    const script = loadScript(dir, 'read-thing-2.lua', { readOnly: true });
    expect(script.numberOfKeys).toBe(2);
    expect(script.readOnly).toBe(true);
    // Read-only to Redis as well: it runs while writes are paused, and on replicas.
    expect(script.lua).toBe(
      "#!lua flags=no-writes\n-- header\nif redis.call('EXISTS', KEYS[1]) == 0 then return nil end\nreturn redis.call('GET', KEYS[2])\n",
    );
    expect(loadScript(dir, 'read-thing-2.lua').lua).toMatch(/^-- header\n/);
  });

  it('refuses a file name without its key count', () => {
    const dir = scriptDir({ 'read-thing.lua': 'return 1' });
    expect(() => loadScript(dir, 'read-thing.lua')).toThrow(/number of keys/);
  });

  it('loads the API scripts with the shared access check', () => {
    const script = loadScript(new URL('../../api/lua/', import.meta.url), 'read-flow-4.lua');
    expect(script.numberOfKeys).toBe(4);
    expect(script.lua).toContain("redis.call('HGET', KEYS[1], ARGV[1])");
    expect(script.lua).not.toContain('@include');
  });
});
