import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Every operator command as an operator runs it, with Kafka and Redis pointed at listeners that
// only count connections: --help prints the usage and exits 0, a bad command line prints the
// reason and the usage on stderr and exits 2, and `--execute` without a terminal or --yes is
// refused the same way; none of them opens a single connection. TOOLS_FROM=dist runs the
// compiled commands (`node dist/tools/<name>.js`, as the runbooks do) instead of the sources:
// CI's build phase runs this file so, once `npm run build` has written them.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FROM_DIST = process.env.TOOLS_FROM === 'dist';
const COMMANDS = [
  'rebuild',
  'skip-batch',
  'dead-letters',
  'issue-key',
  'simulator',
  'create-topics',
  'register-schemas',
] as const;

let connections = 0;
const listeners: Server[] = [];
const env: Record<string, string> = {};

async function listen(): Promise<number> {
  const server = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  listeners.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as { port: number }).port;
}

beforeAll(async () => {
  env.KAFKA_BROKERS = `127.0.0.1:${await listen()}`;
  env.REDIS_URL = `redis://127.0.0.1:${await listen()}`;
});
afterAll(async () => {
  await Promise.all(listeners.map((s) => new Promise((resolve) => s.close(resolve))));
});

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

/** Runs a command with stdin closed (not a terminal). */
function run(command: string, ...args: string[]): Promise<Run> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      FROM_DIST
        ? [`dist/tools/${command}.js`, ...args]
        : ['--import', 'tsx', `tools/${command}.ts`, ...args],
      { cwd: ROOT, env: { ...process.env, ...env, LOG_LEVEL: 'info' }, timeout: 60_000 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? Number(error.code ?? 1) : 0,
          stdout,
          stderr,
          ms: Date.now() - started,
        }),
    );
    child.stdin?.end();
  });
}

describe('every operator command', () => {
  it('answers --help and -h with its usage on stdout, exit 0, connecting to nothing', async () => {
    const runs = await Promise.all(
      COMMANDS.flatMap((c) => [run(c, '--help'), run(c, '-h', '--execute')]),
    );
    for (const [i, r] of runs.entries()) {
      const command = COMMANDS[Math.floor(i / 2)] as string;
      expect(r, command).toMatchObject({ code: 0, stderr: '' });
      expect(r.stdout).toMatch(new RegExp(`^usage: ${command}\\b`));
      expect(r.stdout).toContain('-h, --help');
    }
    expect(connections).toBe(0);
  }, 120_000);

  it('exits 2 with the reason and its usage on stderr for an unknown flag', async () => {
    const runs = await Promise.all(
      COMMANDS.map((c) =>
        c === 'dead-letters' ? run(c, 'list', '--frobnicate') : run(c, '--frobnicate'),
      ),
    );
    for (const [i, r] of runs.entries()) {
      const command = COMMANDS[i] as string;
      expect(r, command).toMatchObject({ code: 2, stdout: '' });
      expect(r.stderr).toMatch(new RegExp(`^${command}: Unknown option '--frobnicate'`));
      expect(r.stderr).toContain(`usage: ${command}`);
    }
    expect(connections).toBe(0);
  }, 120_000);

  it('exits 2 for a missing required value, naming it', async () => {
    const [skip, key, sim, dead] = await Promise.all([
      run('skip-batch', '--topic', 't', '--partition', '0'),
      run('issue-key', '--application', '1', '--installations', '1'),
      run('simulator', '--installations', '5', '--rate'),
      run('dead-letters', '--json'),
    ]);
    expect(skip.stderr).toMatch(/^skip-batch: --to-offset is required/);
    expect(key.stderr).toMatch(/^issue-key: --owner is required/);
    expect(sim.stderr).toMatch(/^simulator: Option '--rate <value>' argument missing/);
    expect(dead.stderr).toMatch(/^dead-letters: a command is required: list\|show\|replay/);
    for (const r of [skip, key, sim, dead]) expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(connections).toBe(0);
  }, 120_000);

  it('refuses --execute without --yes when stdin is not a terminal, before connecting', async () => {
    const runs = await Promise.all([
      run('rebuild', '--execute'),
      run('skip-batch', '--topic', 't', '--partition', '0', '--to-offset', '3', '--execute'),
      run('dead-letters', 'replay', '--execute'),
    ]);
    for (const r of runs) {
      expect(r).toMatchObject({ code: 2, stdout: '' });
      expect(r.stderr).toContain('stdin is not a terminal: add --yes to confirm --execute');
    }
    expect(connections).toBe(0);
  }, 120_000);
});
