import { readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { BENCH_ONLINE_WINDOW_SECONDS } from '../workload/direct-write.js';
import {
  type Counts,
  countsSinceZero,
  instructionsSinceZero,
  zeroInstructions,
} from './instructions.js';
import { type Child, httpOk, startChild, waitUntil } from './processes.js';
import { cannon, type Request } from './side-by-side.js';
import { type Message, REDIS_URL } from './stack.js';
import type { TelemetryTopic } from './telemetry-topic.js';
import type { Side } from './tracing-sides.js';

// Instructions per read and per ingested event of one side of bench/cases/tracing-cost.ts, its
// process under callgrind (instructions.ts): started and warmed up uncounted, counters zeroed,
// the measured work, counters read. Beside it, what the process does idle over the same time
// (timers, heartbeats, long polls, the exporter's flushes) as a share of the count, since that
// part grows with the slower side's longer measured span, not with the work.

/** Waiting for a process under callgrind to start: tsx compiling every source, 5-10x slower. */
const START_TIMEOUT_MS = 300_000;
/** The idle window measured before the work. */
const IDLE_MS = 5_000;

export interface Counted {
  /** Instructions per request or per event, idle included. */
  readonly perUnit: number;
  /** Of the count, V8's optimizing compilers' share (instructions.ts): warm-up left in it. */
  readonly compilingShare: number;
  /**
   * Of the count, what the process would have spent idle over the measured span: counted, it
   * runs some 50x slower, so its timers weigh some 50x more per unit than at full speed. An
   * estimate from a 5 s window (an export or a GC in it moves it): shown, not taken off.
   */
  readonly idleShare: number;
  /** What went wrong while counting (a rebalance), or null. */
  readonly spoiled: string | null;
}

export interface Where {
  /** A directory for callgrind's files and the children's logs. */
  readonly dir: string;
  /** Where the measured span's dump is kept, if anywhere (a name is added). */
  readonly keepDir: string | null;
  readonly name: string;
  readonly side: Side;
}

/** Instructions per GET: `warmup` requests, then `count` counted, `connections` at a time. */
export async function readInstructions(
  where: Where,
  api: { port: number; prefix: string },
  request: Request,
  load: { warmup: number; count: number; connections: number },
): Promise<Counted> {
  const origin = `http://127.0.0.1:${api.port}`;
  const out = join(where.dir, `api-${where.name}.callgrind`);
  const child = startChild({
    name: `api-${where.name}`,
    script: join(where.side.dir, 'api/main.ts'),
    env: {
      REDIS_URL,
      REDIS_KEY_PREFIX: api.prefix,
      API_PORT: String(api.port),
      LOG_LEVEL: 'warn',
      ONLINE_WINDOW_SECONDS: String(BENCH_ONLINE_WINDOW_SECONDS),
      // Slowed down 50x, the measured reads must not outlive the near-cache's entries.
      API_NEAR_CACHE_MAX_AGE_MS: '3600000',
      ...where.side.env,
    },
    logDir: where.dir,
    callgrindOut: out,
  });
  try {
    await waitUntil(
      `api ${where.name}`,
      () => httpOk(`${origin}/healthz`),
      START_TIMEOUT_MS,
      child,
      500,
    );
    await expectAll(
      cannon(origin, request, { connections: load.connections, amount: load.warmup }),
    );
    const idlePerMs = await idleRate(child, out);
    zeroInstructions(child.pid);
    const started = Date.now();
    await expectAll(cannon(origin, request, { connections: load.connections, amount: load.count }));
    const ms = Date.now() - started;
    const counts = countsSinceZero(child.pid, out, kept(where, 'reads'));
    return counted(counts, load.count, idlePerMs * ms, null);
  } finally {
    await child.stop(60_000);
    rmSync(out, { force: true });
  }
}

/**
 * Instructions per event of the consumer process: `warmup` drained uncounted, then `measured`
 * produced and drained counted. A rebalance while counting (the process rejoining its group:
 * it fetches again what it had not committed) is reported in `spoiled`.
 */
export async function ingestInstructions(
  where: Where,
  topic: TelemetryTopic,
  warmup: readonly Message[],
  measured: readonly Message[],
): Promise<Counted> {
  await topic.produce(warmup, warmup.length);
  const out = join(where.dir, `consumers-${where.name}.callgrind`);
  const log = join(where.dir, `consumers-${where.name}.log`);
  const child = startChild({
    name: `consumers-${where.name}`,
    script: join(where.side.dir, 'consumers/main.ts'),
    env: {
      ...topic.env,
      // The group's joins and rejoins are logged at info: how a rebalance is seen.
      LOG_LEVEL: 'info',
      // Counted, a large batch runs for seconds between heartbeats.
      CONSUMER_SESSION_TIMEOUT_MS: '60000',
      ...where.side.env,
    },
    logDir: where.dir,
    callgrindOut: out,
  });
  const drained = (count: number, timeoutMs: number) =>
    waitUntil(
      `consumers ${where.name} commit ${count}`,
      async () => (await topic.committed()) >= count,
      timeoutMs,
      child,
      250,
    );
  try {
    await drained(warmup.length, START_TIMEOUT_MS);
    const idlePerMs = await idleRate(child, out);
    const logFrom = statSync(log).size;
    zeroInstructions(child.pid);
    const started = Date.now();
    await topic.produceAtOnce(measured);
    await drained(warmup.length + measured.length, 1_800_000);
    const ms = Date.now() - started;
    const counts = countsSinceZero(child.pid, out, kept(where, 'ingest'));
    const spoiled = rebalances(readFileSync(log, 'utf8').slice(logFrom));
    return counted(counts, measured.length, idlePerMs * ms, spoiled);
  } finally {
    await child.stop(60_000);
    rmSync(out, { force: true });
  }
}

const kept = (where: Where, what: string) =>
  where.keepDir === null
    ? undefined
    : join(where.keepDir, `${what}-${where.name}-${Date.now().toString(36)}.callgrind`);

function counted(counts: Counts, units: number, idle: number, spoiled: string | null): Counted {
  const { total } = counts;
  const idleShare = Math.min(1, idle / total);
  return {
    compilingShare: counts.compiling / total,
    perUnit: total / units,
    idleShare,
    spoiled,
  };
}

/** Instructions per ms of the warmed-up process doing nothing asked of it. */
async function idleRate(child: Child, out: string): Promise<number> {
  zeroInstructions(child.pid);
  const started = Date.now();
  await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
  const count = instructionsSinceZero(child.pid, out);
  return count / (Date.now() - started);
}

/** The group events runner.ts logs, in a slice of the consumer process's log; null if none. */
function rebalances(log: string): string | null {
  const lines = log
    .split('\n')
    .filter((l) => /rejoining the consumer group|joined the consumer group|crashed/.test(l));
  return lines.length === 0 ? null : `${lines.length} group events: ${lines[0]?.slice(0, 200)}`;
}

async function expectAll(
  result: PromiseLike<{ errors: number; non2xx: number; requests: { total: number } }>,
): Promise<void> {
  const r = await result;
  if (r.errors > 0 || r.non2xx > 0) {
    throw new Error(`${r.errors} errors, ${r.non2xx} non-2xx of ${r.requests.total} requests`);
  }
}
