import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

// An operator command (tools/<name>.ts) run as its own process, as an operator or a script runs
// it: stdin closed, so it is not a terminal.

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

export interface CommandRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function runOperatorCommand(
  name: string,
  args: readonly string[],
  env: Record<string, string>,
): Promise<CommandRun> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ['--import', 'tsx', `tools/${name}.ts`, ...args],
      { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'info', ...env }, timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
    child.stdin?.end();
  });
}

/** The log lines (JSON, pino's) at error level or above among a command's output. */
export const errorLines = (text: string): string[] =>
  text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .filter((line) => Number((JSON.parse(line) as { level?: number }).level) >= 50);
