import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from './fault-stack.js';

// A consumer or API process as production runs it: `node --import tsx <file>`, no wrapper, so a
// signal reaches node itself.

export interface ServiceProcess {
  readonly name: string;
  readonly pid: number;
  readonly logs: Array<Record<string, unknown>>;
  /** Exit code, or the signal name when killed. */
  readonly exited: Promise<string>;
  alive(): boolean;
  signal(signal: NodeJS.Signals): void;
}

export function startService(
  name: string,
  file: string,
  env: Record<string, string>,
): ServiceProcess {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', file], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Array<Record<string, unknown>> = [];
  // Every line also on disk, for reading a failed run afterwards.
  const logDir = join(ROOT, '.local', 'faults', 'logs');
  mkdirSync(logDir, { recursive: true });
  const logFile = createWriteStream(
    join(logDir, `${name.replace(/[^\w-]/g, '_')}-${Date.now()}.log`),
  );
  child.once('close', () => logFile.end());
  const keep = (line: string) => {
    logFile.write(`${line}\n`);
    try {
      logs.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      logs.push({ msg: line });
    }
    if (logs.length > 5_000) logs.splice(0, 1_000);
  };
  if (child.stdout) createInterface({ input: child.stdout }).on('line', keep);
  if (child.stderr) createInterface({ input: child.stderr }).on('line', keep);
  let done = false;
  const exited = new Promise<string>((resolve) =>
    child.once('exit', (code, signal) => {
      done = true;
      resolve(signal ?? String(code));
    }),
  );
  return {
    name,
    pid: child.pid ?? -1,
    logs,
    exited,
    alive: () => !done,
    signal: (signal) => {
      if (!done) child.kill(signal);
    },
  };
}
