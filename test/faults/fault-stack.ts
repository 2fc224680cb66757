import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

// The fault suite's own Kafka and Redis (infra/stack.sh on other ports and another data dir):
// it kills and restarts them, so it never touches the shared stack on 19092/16379.

const run = promisify(execFile);
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface FaultStack {
  readonly kafkaBrokers: string;
  readonly redisUrl: string;
  start(what?: 'kafka' | 'redis'): Promise<void>;
  stop(): Promise<void>;
  /** kill -9 of the service's process; its data stays for the restart. */
  kill9(what: 'kafka' | 'redis'): void;
}

export function faultStack(
  ports = { kafka: 19592, controller: 19593, redis: 16879 },
  name = 'faults',
): FaultStack {
  const dir = join(ROOT, '.local', name);
  const env = {
    ...process.env,
    STACK_DIR: dir,
    KAFKA_PORT: String(ports.kafka),
    KAFKA_CONTROLLER_PORT: String(ports.controller),
    REDIS_PORT: String(ports.redis),
    KAFKA_HEAP_OPTS: '-Xms256m -Xmx768m',
  };
  const stack = async (...args: string[]) => {
    try {
      await run('bash', [join(ROOT, 'infra/stack.sh'), ...args], { env, cwd: ROOT });
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string };
      throw new Error(
        `infra/stack.sh ${args.join(' ')} failed: ${e.stderr ?? ''}${e.stdout ?? ''}`,
      );
    }
  };
  const pidOf = (what: 'kafka' | 'redis') =>
    Number(readFileSync(join(dir, what, `${what}.pid`), 'utf8').trim());
  return {
    kafkaBrokers: `127.0.0.1:${ports.kafka}`,
    redisUrl: `redis://127.0.0.1:${ports.redis}`,
    start: (what) => stack('start', ...(what ? [what] : [])),
    stop: () => stack('stop'),
    kill9(what) {
      process.kill(pidOf(what), 'SIGKILL');
    },
  };
}
