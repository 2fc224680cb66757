import { createRequire } from 'node:module';
import { cpuSecondsOf } from './cpu.js';
import { numberArg } from './options.js';
import type { Target } from './standalone.js';
import { median } from './stats.js';

// Autocannon against the servers of a standalone case (standalone.ts), side by side in one run:
// the sides alternate (B C B C …) and each is summed up by its medians.

interface CannonResult {
  requests: { total: number };
  duration: number;
  non2xx: number;
  errors: number;
  latency: { p99: number };
}
type Autocannon = (opts: Record<string, unknown>) => PromiseLike<CannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

export const pick = <T>(list: readonly T[]) => list[Math.floor(Math.random() * list.length)] as T;

/** One GET: a path under the origin and its headers. */
export type Request = () => { path: string; headers: Record<string, string> };

/** GETs built by `request()` against `origin`, for `duration` seconds or `amount` requests. */
export function cannon(
  origin: string,
  request: Request,
  opts: { connections: number; duration?: number; amount?: number },
): PromiseLike<CannonResult> {
  return autocannon({
    url: origin,
    ...opts,
    requests: [
      {
        method: 'GET',
        setupRequest: (r: Record<string, unknown>) => Object.assign(r, request()),
      },
    ],
  });
}

export interface Run {
  readonly rps: number;
  /** The target's CPU per request, µs. */
  readonly cpuUs: number;
  /** ms */
  readonly p99: number;
}

export interface LoadRunner {
  readonly seconds: number;
  readonly alternations: number;
  readonly connections: number;
  /** One measured run: `seconds` of `request()` at `connections` against `target`. */
  run(target: Target, request: Request): Promise<Run>;
  /** `alternations` rounds of every side in turn (B C B C …); the runs of each side. */
  alternate<K extends string>(sides: Record<K, () => Promise<Run>>): Promise<Record<K, Run[]>>;
}

/**
 * Load as the command line asks: `--seconds` (6) a run, `--alternations` (3) rounds,
 * `--connections` (the case's default). Warns on errors, and on non-2xx answers too unless the
 * case expects them (a 304 is one).
 */
export function loadRunner(opts: { connections: number; non2xxExpected?: boolean }): LoadRunner {
  const seconds = numberArg('seconds', 6);
  const alternations = numberArg('alternations', 3);
  const connections = numberArg('connections', opts.connections);
  return {
    seconds,
    alternations,
    connections,
    async run(target, request) {
      const before = cpuSecondsOf(target.pid);
      const result = await cannon(target.origin, request, { connections, duration: seconds });
      const cpu = cpuSecondsOf(target.pid) - before;
      if (opts.non2xxExpected) {
        if (result.errors > 0) console.warn(`  ${result.errors} errors`);
      } else if (result.errors > 0 || result.non2xx > 0) {
        console.warn(`  ${result.errors} errors, ${result.non2xx} non-2xx`);
      }
      return {
        rps: result.requests.total / result.duration,
        cpuUs: (cpu / result.requests.total) * 1e6,
        p99: result.latency.p99,
      };
    },
    async alternate<K extends string>(sides: Record<K, () => Promise<Run>>) {
      const names = Object.keys(sides) as K[];
      const runs = Object.fromEntries(names.map((n) => [n, [] as Run[]])) as Record<K, Run[]>;
      for (let i = 0; i < alternations; i++) {
        for (const n of names) runs[n].push(await sides[n]());
      }
      return runs;
    },
  };
}

/** The median of one figure over runs. */
export const medianOf = (runs: readonly Run[], figure: (r: Run) => number) =>
  median(runs.map(figure));

/** The requests per second of each run, for the `[runs …]` part of a line. */
export const rpsList = (runs: readonly Run[]) => runs.map((r) => r.rps.toFixed(0)).join(' ');
