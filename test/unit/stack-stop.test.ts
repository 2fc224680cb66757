import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

// `npm run stack:stop` (also the end of `bash infra/demo.sh stop`) says what it stopped, and
// nothing about what was not running: someone who never started a Redis Cluster reads no line
// about one. Run against an empty state directory, so nothing of a real stack is touched.

const root = new URL('../../', import.meta.url).pathname;
const empty = mkdtempSync(join(tmpdir(), 'stack-stop-'));
afterAll(() => rmSync(empty, { recursive: true, force: true }));

const stop = (script: string) =>
  execFileSync('bash', [join(root, script), 'stop'], {
    encoding: 'utf8',
    env: { ...process.env, STACK_DIR: empty },
  });

describe('stop with nothing running', () => {
  it('infra/stack.sh prints nothing', () => {
    expect(stop('infra/stack.sh')).toBe('');
  });
});
