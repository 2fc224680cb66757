import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import type { LoadResult, LoadSpec } from '../load/load-spec.js';
import { BENCH_ONLINE_WINDOW_SECONDS } from '../workload/direct-write.js';
import type { AppSpec } from '../workload/plan.js';
import { cpuMeter, type Pids } from './cpu.js';
import type { BenchOptions } from './options.js';
import { type Child, freePort, httpOk, startChild, waitUntil } from './processes.js';
import type { Row } from './report.js';
import { BASE_PATH, type BenchKafka, KAFKA_BROKERS, REDIS_URL } from './stack.js';
import { pinGenerator } from './wrk.js';

// What every case needs: options, clients, a scratch directory, the processes it starts (stopped
// at the end whatever happens) and the rows it records.

export interface BenchContext {
  readonly opts: BenchOptions;
  readonly runId: string;
  readonly dir: string;
  readonly redis: Redis;
  readonly kafka: BenchKafka;
  readonly redisPid: number;
  readonly kafkaPid: number | null;
  readonly rows: Row[];
  readonly children: Set<Child>;
  readonly cleanups: Array<() => Promise<void>>;
  readonly notes: string[];
}

export const commonEnv = (prefix: string): Record<string, string> => ({
  REDIS_URL,
  KAFKA_BROKERS,
  REDIS_KEY_PREFIX: prefix,
  LOG_LEVEL: 'warn',
  ONLINE_WINDOW_SECONDS: String(BENCH_ONLINE_WINDOW_SECONDS),
});

export function track(ctx: BenchContext, child: Child): Child {
  ctx.children.add(child);
  child.process.once('exit', () => ctx.children.delete(child));
  return child;
}

export interface Server {
  readonly child: Child;
  readonly origin: string;
}

/** The API under test, as its own process (`node --import tsx api/main.ts`). */
export async function startApi(
  ctx: BenchContext,
  name: string,
  prefix: string,
  nodeArgs: readonly string[] = [],
  env: Record<string, string> = {},
  script = 'api/main.ts',
): Promise<Server> {
  const port = await freePort();
  const child = track(
    ctx,
    startChild({
      name,
      script,
      env: { ...commonEnv(prefix), API_HOST: '127.0.0.1', API_PORT: String(port), ...env },
      nodeArgs,
      logDir: ctx.dir,
    }),
  );
  const origin = `http://127.0.0.1:${port}`;
  await waitUntil(`${name} ready`, () => httpOk(`${origin}/readyz`), 60_000, child);
  return { child, origin };
}

export async function startBaselineServer(ctx: BenchContext, bodiesFile: string): Promise<Server> {
  const port = await freePort();
  const child = track(
    ctx,
    startChild({
      name: 'baseline-server',
      script: 'bench/servers/baseline-server.ts',
      args: [bodiesFile, String(port), BASE_PATH],
      logDir: ctx.dir,
    }),
  );
  const origin = `http://127.0.0.1:${port}`;
  await waitUntil('baseline server ready', () => httpOk(`${origin}/healthz`), 60_000, child);
  return { child, origin };
}

/**
 * The miss baseline: one Redis read per request (bench/servers/one-read-server.ts); `contract`:
 * with the per-request work the contract asks of every answer.
 */
export async function startOneReadServer(
  ctx: BenchContext,
  name: string,
  prefix: string,
  apps: readonly AppSpec[],
  mode: 'one-read' | 'contract' = 'one-read',
): Promise<Server> {
  // It knows each key's application from this file: it does no authentication of its own.
  const applicationsFile = join(ctx.dir, `${name}-applications.json`);
  writeFileSync(
    applicationsFile,
    JSON.stringify(Object.fromEntries(apps.map((a) => [a.key.apiKey, a.applicationId]))),
  );
  const port = await freePort();
  const child = track(
    ctx,
    startChild({
      name,
      script: 'bench/servers/one-read-server.ts',
      args: [REDIS_URL, prefix, applicationsFile, String(port), BASE_PATH, mode],
      logDir: ctx.dir,
    }),
  );
  const origin = `http://127.0.0.1:${port}`;
  await waitUntil(`${name} ready`, () => httpOk(`${origin}/healthz`), 60_000, child);
  return { child, origin };
}

export interface ConsumerTopics {
  readonly installations: string;
  readonly telemetry: string;
  readonly access: string;
  readonly deadletter: string;
}

/** The project's consumer process (`node --import tsx consumers/main.ts`). */
export async function startConsumerProcess(
  ctx: BenchContext,
  name: string,
  prefix: string,
  topics: ConsumerTopics,
  group: string,
  nodeArgs: readonly string[] = [],
): Promise<{ child: Child; healthOrigin: string }> {
  const port = await freePort();
  const child = track(
    ctx,
    startChild({
      name,
      script: 'consumers/main.ts',
      env: {
        ...commonEnv(prefix),
        TOPIC_INSTALLATIONS: topics.installations,
        TOPIC_TELEMETRY: topics.telemetry,
        TOPIC_ACCESS: topics.access,
        TOPIC_DEADLETTER: topics.deadletter,
        CONSUMER_GROUP: group,
        CONSUMER_HEALTH_PORT: String(port),
        KAFKA_CLIENT_ID: `bench-${name}`,
      },
      nodeArgs,
      logDir: ctx.dir,
    }),
  );
  const healthOrigin = `http://127.0.0.1:${port}`;
  await waitUntil(`${name} ready`, () => httpOk(`${healthOrigin}/readyz`), 90_000, child, 50);
  return { child, healthOrigin };
}

/** The Kafka clients a bare consumer (`bench/servers/`) exists for. */
export type BareClient = 'kafkajs' | 'platformatic';

const BARE_CONSUMER_SCRIPTS: Record<BareClient, string> = {
  kafkajs: 'bench/servers/bare-consumer.ts',
  platformatic: 'bench/servers/bare-consumer-platformatic.ts',
};

export function startBareConsumer(
  ctx: BenchContext,
  topic: string,
  group: string,
  total: number,
  outFile: string,
  client: BareClient = 'kafkajs',
): Child {
  return track(
    ctx,
    startChild({
      name: client === 'kafkajs' ? 'bare-consumer' : `bare-consumer-${client}`,
      script: BARE_CONSUMER_SCRIPTS[client],
      args: [KAFKA_BROKERS, topic, group, String(total), outFile],
      logDir: ctx.dir,
    }),
  );
}

export interface MeasuredLoad {
  readonly result: LoadResult;
  /** Cores used per process during the load (CPU seconds / load seconds). */
  readonly cpu: Record<string, number>;
}

/** Runs one load generator child against `origin` and measures the CPU of `pids` meanwhile. */
export async function runLoad(
  ctx: BenchContext,
  kind: 'closed' | 'open',
  spec: Omit<LoadSpec, 'basePath' | 'connections'> & { connections?: number },
  pids: Pids,
  /** The generator on its own CPU (bench/lib/wrk.ts): for targets pinned with pinTarget. */
  opts: { pinGenerator?: boolean } = {},
): Promise<MeasuredLoad> {
  const id = `${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const specFile = join(ctx.dir, `load-${id}.json`);
  const outFile = join(ctx.dir, `load-${id}.out.json`);
  writeFileSync(
    specFile,
    JSON.stringify({ basePath: BASE_PATH, connections: ctx.opts.connections, ...spec }),
  );
  const generator = track(
    ctx,
    startChild({
      name: `${kind}-loop`,
      script: `bench/load/${kind}-loop.ts`,
      args: [specFile, outFile],
      logDir: ctx.dir,
    }),
  );
  if (opts.pinGenerator && generator.process.pid !== undefined) pinGenerator(generator.process.pid);
  const meter = cpuMeter({ ...pids, redis: ctx.redisPid });
  const code = await new Promise<number | null>((resolve) =>
    generator.process.once('exit', (c) => resolve(c)),
  );
  const seconds = meter();
  if (code !== 0) throw new Error(`${kind}-loop generator failed (exit ${code}); see ${ctx.dir}`);
  const result = JSON.parse(readFileSync(outFile, 'utf8')) as LoadResult;
  const cpu = Object.fromEntries(
    Object.entries({ ...seconds, generator: result.cpuSeconds }).map(([name, s]) => [
      name,
      s / result.durationS,
    ]),
  );
  return { result, cpu };
}
