import { writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import type { Installation } from '../../src/domain/installation.js';
import { connectRedis, type RedisClient } from '../../src/read-model/redis-connection.js';
import { createSeeder, type Seeder } from '../../tools/seed/read-model-seed.js';
import { device } from '../../tools/seed/records.js';
import { BENCH_ONLINE_WINDOW_SECONDS } from '../workload/direct-write.js';
import { type Child, httpOk, startChild, waitUntil } from './processes.js';
import { BASE_PATH, benchRedis, dropPrefix, exitUnlessConnects, REDIS_URL } from './stack.js';

// The standalone cases (bench/cases/<case>.ts run on their own with npx tsx, outside
// bench/run.ts): a Redis prefix of their own, seeded through the consumers' store, the API and
// the bare Fastify baseline as `node --import tsx` children on fixed ports, and at the end the
// children stopped and the prefix dropped. Load against them: side-by-side.ts.

/** A server under load: where it answers and the pid whose CPU it costs. */
export interface Target {
  readonly origin: string;
  readonly pid: number;
  /** Where callgrind writes its counts, when the case runs its children under it. */
  readonly callgrindOut?: string;
}

/** Bodies the baseline server answers: endpoint -> [installation id (or key), body]. */
export type Bodies = Record<string, Array<[string, string]>>;

export interface Standalone {
  readonly prefix: string;
  readonly redis: RedisClient;
  readonly seed: Seeder;
  /** `api/main.ts` (or `script`, same settings) on the prefix; resolves once /healthz answers. */
  api(port: number, env?: Record<string, string>, script?: string): Promise<Target>;
  /** bench/servers/baseline-server.ts answering `bodies`; resolves once /healthz answers. */
  baseline(port: number, bodies: Bodies): Promise<Target>;
  /**
   * bench/servers/one-read-server.ts on the prefix: the same stored bytes with one Redis read
   * per request (the miss baseline of issue 38); `applications`: API key -> application.
   */
  oneRead(port: number, applications: Record<string, number>): Promise<Target>;
  /** Stops the children, drops the prefix, disconnects. */
  close(): Promise<void>;
}

/**
 * `clusterNodes`: the case's model and API on that Redis Cluster instead of the one Redis.
 * `callgrindDir`: every child runs under callgrind (bench/lib/instructions.ts), its counts there.
 */
export function standalone(
  name: string,
  options: { clusterNodes?: string; callgrindDir?: string } = {},
): Standalone {
  const prefix = `bench:${name}-${Date.now().toString(36)}:`;
  const clusterNodes = options.clusterNodes ?? '';
  const redis = clusterNodes
    ? exitUnlessConnects(
        connectRedis(loadConfig({ REDIS_URL, REDIS_CLUSTER_NODES: clusterNodes }).redis, {
          maxRetriesPerRequest: 3,
        }),
        REDIS_URL,
      )
    : benchRedis();
  const children: Child[] = [];
  const { callgrindDir } = options;
  // Under callgrind a process starts about 50x slower.
  const startMs = callgrindDir === undefined ? 30_000 : 600_000;
  const start = async (
    child: string,
    script: string,
    port: number,
    args: string[],
    env: Record<string, string>,
  ): Promise<Target> => {
    const callgrindOut =
      callgrindDir === undefined ? undefined : join(callgrindDir, `${child}-${port}.callgrind`);
    const started = startChild({ name: child, script, args, env, callgrindOut });
    children.push(started);
    const origin = `http://127.0.0.1:${port}`;
    await waitUntil(
      `${child} on ${origin}`,
      () => httpOk(`${origin}/healthz`),
      startMs,
      started,
      200,
    );
    return { origin, pid: started.pid, callgrindOut };
  };
  return {
    prefix,
    redis,
    seed: createSeeder(redis, prefix),
    api: (port, env = {}, script = 'api/main.ts') =>
      start('api', script, port, [], {
        REDIS_URL,
        REDIS_CLUSTER_NODES: clusterNodes,
        REDIS_KEY_PREFIX: prefix,
        API_PORT: String(port),
        LOG_LEVEL: 'warn',
        ONLINE_WINDOW_SECONDS: String(BENCH_ONLINE_WINDOW_SECONDS),
        ...env,
      }),
    baseline(port, bodies) {
      const file = join(tmpdir(), `${prefix.replace(/[:]/g, '-')}bodies.json`);
      writeFileSync(file, JSON.stringify(bodies));
      return start(
        'baseline-server',
        'bench/servers/baseline-server.ts',
        port,
        [file, String(port), BASE_PATH],
        {},
      );
    },
    oneRead(port, applications) {
      const file = join(tmpdir(), `${prefix.replace(/[:]/g, '-')}applications.json`);
      writeFileSync(file, JSON.stringify(applications));
      return start(
        'one-read-server',
        'bench/servers/one-read-server.ts',
        port,
        [REDIS_URL, prefix, file, String(port), BASE_PATH],
        {},
      );
    },
    async close() {
      await Promise.all(children.map((c) => c.stop()));
      await dropPrefix(redis, prefix);
      redis.disconnect();
    },
  };
}

/** Device states of a seeded installation's inverter, battery and energy meter. */
export type FlowStates = Readonly<
  Record<'inverter' | 'battery' | 'energyMeter', Record<string, number>>
>;

/**
 * Every installation with an inverter, a battery and a meter (ids `id * 10 + 1..3`) last seen
 * 5, 7 and 9 s ago, then each key a live key of its own application (1, 2, …) granted all of
 * them.
 */
export async function seedFlowModel(
  seed: Seeder,
  installations: readonly Installation[],
  keys: readonly string[],
  states: FlowStates,
  nowMs = Date.now(),
): Promise<void> {
  const at = (s: number) => nowMs - s * 1000;
  for (const inst of installations) {
    await seed.installation(inst);
    await seed.devices(
      inst.id,
      [
        {
          category: 'inverter',
          record: device('inverter', inst.id * 10 + 1, inst.id, at(5), states.inverter),
        },
        {
          category: 'battery',
          record: device('battery', inst.id * 10 + 2, inst.id, at(7), states.battery),
        },
        {
          category: 'energyMeter',
          record: device('energyMeter', inst.id * 10 + 3, inst.id, at(9), states.energyMeter),
        },
      ],
      nowMs,
      BENCH_ONLINE_WINDOW_SECONDS,
    );
  }
  for (const [a, key] of keys.entries()) {
    await seed.liveKey(key, { app: a + 1, installations });
  }
}

/** The 1, 5 and 15 minute load averages, for the line a case prints before and after. */
export const loadAverage = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
