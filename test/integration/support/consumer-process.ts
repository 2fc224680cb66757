import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { waitFor } from '../../support/stack.js';

// The consumer process itself (consumers/main.ts), for what only a process shows: its exit
// code, its log lines and its health server.

export interface ConsumerProcess {
  readonly logs: Array<Record<string, unknown>>;
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
  /** Port of /healthz, /readyz and /metrics, once the process logged it. */
  healthPort(): Promise<number>;
  get(path: string): Promise<{ status: number; body: string }>;
  log(
    what: string,
    match: (line: Record<string, unknown>) => boolean,
  ): Promise<Record<string, unknown>>;
  kill(): Promise<void>;
}

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

export function startConsumerProcess(env: Record<string, string>): ConsumerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', 'consumers/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env, CONSUMER_HEALTH_PORT: '0', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr = (stderr + String(chunk)).slice(-4000);
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      logs.push({ msg: line });
    }
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const log = (what: string, match: (line: Record<string, unknown>) => boolean) =>
    waitFor(`${what} (stderr: ${stderr})`, async () => logs.find(match), 30_000);
  const healthPort = async () =>
    Number((await log('health port', (l) => typeof l.healthPort === 'number')).healthPort);
  return {
    logs,
    exited,
    healthPort,
    log,
    async get(path) {
      const res = await fetch(`http://127.0.0.1:${await healthPort()}${path}`);
      return { status: res.status, body: await res.text() };
    },
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
