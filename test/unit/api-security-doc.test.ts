import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';

// docs/security.md is kept true: every test it cites exists, every variable it names is one
// the configuration reads, and the listener defaults it states are the configuration's.
const doc = readFileSync(new URL('../../docs/security.md', import.meta.url), 'utf8');
const configSource = readFileSync(new URL('../../src/config.ts', import.meta.url), 'utf8');

describe('docs/security.md', () => {
  it('cites only tests that exist', () => {
    const cited = new Set([...doc.matchAll(/`([a-z-]+\.test\.ts)`/g)].map((m) => m[1] as string));
    expect(cited.size).toBeGreaterThan(3);
    for (const file of cited) {
      const found = ['integration', 'unit', 'browser'].some((dir) =>
        existsSync(new URL(`../${dir}/${file}`, import.meta.url)),
      );
      expect(found, file).toBe(true);
    }
  });

  it('names only configuration variables that exist', () => {
    const names = new Set(
      [...doc.matchAll(/`((?:API|CONSUMER)_[A-Z_]+)`/g)].map((m) => m[1] as string),
    );
    expect(names.size).toBeGreaterThan(5);
    for (const name of names) expect(configSource, name).toContain(`${name}:`);
  });

  it('states the listeners’ defaults the configuration has', () => {
    const config = loadConfig({});
    expect(doc).toContain(`| \`${config.api.host}:${config.api.port}\` |`);
    expect(doc).toContain(`| \`${config.consumer.healthHost}:${config.consumer.healthPort}\` |`);
  });
});
