import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { freePort } from '../support/free-port.js';

// A bench case started without the stack fails at once with one line that says how to start
// it: no ioredis "Unhandled error event" per retry, no stack trace.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function runCase(file: string, env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', file],
      { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('a bench case without the stack', () => {
  it.each([
    ['Redis', 'bench/cases/push.ts'],
    ['Kafka', 'bench/cases/access-build.ts'],
  ])('names %s, how to start the stack, and exits 1 (%s)', async (what, file) => {
    const [kafka, redis] = [await freePort(), await freePort()];
    const run = await runCase(file, {
      BENCH_KAFKA_BROKERS: `127.0.0.1:${kafka}`,
      BENCH_REDIS_URL: `redis://user:s3cret@127.0.0.1:${redis}`,
    });
    expect(run.code).toBe(1);
    const lines = run.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(new RegExp(`^bench: ${what} at \\S+ is not reachable \\(`));
    expect(lines[0]).toContain('npm run stack:start');
    expect(lines[0]).toContain('BENCH_REDIS_URL');
    expect(run.stderr).not.toContain('Unhandled error event');
    expect(run.stderr).not.toContain('s3cret');
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });
});
