import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

// The fault suite's own Kafka and Redis (infra/stack.sh on other ports and another data dir):
// it kills and restarts them, so it never touches the shared stack on 19092/16379. Kafka is a
// single broker, or (`--kafka cluster`) three replicated brokers on FAULTS_KAFKA_CLUSTER_PORT_BASE
// (19621) .. +5, whose nodes the suite kills, stops and restarts one at a time.

const run = promisify(execFile);
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface FaultStack {
  /** host:port of every broker, comma-separated (as KAFKA_BROKERS takes them). */
  readonly kafkaBrokers: string;
  /** 1, or 3 for the three-broker stack; its nodes are numbered 1..3. */
  readonly brokerCount: number;
  readonly redisUrl: string;
  start(what?: 'kafka' | 'redis'): Promise<void>;
  stop(): Promise<void>;
  /** kill -9 of the service's process; its data stays for the restart. */
  kill9(what: 'kafka' | 'redis'): void;
  /** kill -9 of broker node `n` of the three (start('kafka') brings it back). */
  kill9Broker(n: number): void;
  /** Stops broker node `n` as an operator does (SIGTERM: controlled shutdown). */
  stopBroker(n: number): Promise<void>;
}

export function clusterFaultStack(
  base = Number(process.env.FAULTS_KAFKA_CLUSTER_PORT_BASE ?? '19621'),
  redisPort = 16879,
): FaultStack {
  const dir = join(ROOT, '.local', 'faults-cluster');
  const script = scriptRunner({
    ...process.env,
    STACK_DIR: dir,
    KAFKA_CLUSTER_PORT_BASE: String(base),
    REDIS_PORT: String(redisPort),
  });
  const single = faultStack({ kafka: 0, controller: 0, redis: redisPort }, 'faults-cluster');
  const brokerPid = (n: number) =>
    Number(readFileSync(join(dir, 'kafka-cluster', `n${n}`, 'kafka.pid'), 'utf8').trim());
  return {
    kafkaBrokers: [0, 2, 4].map((i) => `127.0.0.1:${base + i}`).join(','),
    brokerCount: 3,
    redisUrl: single.redisUrl,
    async start(what) {
      if (what !== 'kafka') await script('start', 'redis');
      if (what !== 'redis') await script('start', 'kafka-cluster');
    },
    stop: () => script('stop'),
    kill9(what) {
      if (what !== 'redis') throw new Error('three brokers: kill one with kill9Broker(n)');
      single.kill9('redis');
    },
    kill9Broker(n) {
      process.kill(brokerPid(n), 'SIGKILL');
    },
    stopBroker: (n) => script('stop', 'kafka-cluster', String(n)),
  };
}

function scriptRunner(env: NodeJS.ProcessEnv) {
  return async (...args: string[]) => {
    try {
      await run('bash', [join(ROOT, 'infra/stack.sh'), ...args], { env, cwd: ROOT });
    } catch (error) {
      const e = error as { stdout?: string; stderr?: string };
      throw new Error(
        `infra/stack.sh ${args.join(' ')} failed: ${e.stderr ?? ''}${e.stdout ?? ''}`,
      );
    }
  };
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
  const stack = scriptRunner(env);
  const pidOf = (what: 'kafka' | 'redis') =>
    Number(readFileSync(join(dir, what, `${what}.pid`), 'utf8').trim());
  return {
    kafkaBrokers: `127.0.0.1:${ports.kafka}`,
    brokerCount: 1,
    redisUrl: `redis://127.0.0.1:${ports.redis}`,
    start: (what) => stack('start', ...(what ? [what] : [])),
    stop: () => stack('stop'),
    kill9(what) {
      process.kill(pidOf(what), 'SIGKILL');
    },
    kill9Broker() {
      throw new Error('one broker: kill it with kill9("kafka")');
    },
    stopBroker: () => stack('stop', 'kafka'),
  };
}
