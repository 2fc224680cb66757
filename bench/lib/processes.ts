import { type ChildProcess, spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { underCallgrind } from './instructions.js';

// Child processes of the bench: each runs `node [--import tsx] <script>` directly (no npx
// wrapper), so its pid is the process doing the work and /proc/<pid>/stat measures it.

export const ROOT = new URL('../..', import.meta.url).pathname;

export interface Child {
  readonly name: string;
  readonly pid: number;
  readonly process: ChildProcess;
  /** SIGTERM, then waits for the exit (SIGKILL after the grace time). */
  stop(graceMs?: number): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}

export function startChild(opts: {
  name: string;
  script: string;
  args?: readonly string[];
  env?: Record<string, string>;
  nodeArgs?: readonly string[];
  /** Where `<name>.log` takes stdout and stderr; without it stdout is dropped, stderr shown. */
  logDir?: string;
  /** Run under valgrind's callgrind, writing its counts here (see instructions.ts). */
  callgrindOut?: string;
}): Child {
  const log =
    opts.logDir === undefined ? null : openSync(join(opts.logDir, `${opts.name}.log`), 'a');
  const node = [
    process.execPath,
    ...(opts.nodeArgs ?? []),
    // Sources through tsx; compiled files (`npm run build`, dist/*.js) by node alone.
    ...(opts.script.endsWith('.ts') ? ['--import', 'tsx'] : []),
    resolve(ROOT, opts.script),
    ...(opts.args ?? []),
  ];
  // valgrind runs the program in its own process: the pid stays the one doing the work.
  const argv = opts.callgrindOut === undefined ? node : underCallgrind(opts.callgrindOut, node);
  const child = spawn(argv[0] as string, argv.slice(1), {
    cwd: ROOT,
    env: { ...process.env, ...opts.env },
    stdio: log === null ? ['ignore', 'ignore', 'inherit'] : ['ignore', log, log],
  });
  if (child.pid === undefined) throw new Error(`could not start ${opts.name}`);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    name: opts.name,
    pid: child.pid,
    process: child,
    async stop(graceMs = 15_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Polls `probe` until it returns true; fails after the deadline or when `child` exits. */
export async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  child?: Child,
  intervalMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && child.process.exitCode !== null) {
      throw new Error(`${child.name} exited (${child.process.exitCode}) while waiting for ${what}`);
    }
    try {
      if (await probe()) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

export async function httpOk(url: string): Promise<boolean> {
  const res = await fetch(url);
  await res.arrayBuffer();
  return res.ok;
}

/** Resident memory of a process, MiB. */
export function rssMiB(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN) / 1024;
  } catch {
    return Number.NaN;
  }
}
