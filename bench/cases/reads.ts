import { type BenchContext, type MeasuredLoad, runLoad, type Server } from '../lib/context.js';
import { printRow, type Row } from '../lib/report.js';
import { median, spread } from '../lib/stats.js';
import type { Endpoint } from '../load/load-spec.js';

// Read cases: closed loop (64 connections, baseline and candidate alternating B C B C …) and
// open loop at 50 % and 80 % of the candidate's measured maximum, both servers at the same rate.

export const ENDPOINTS: readonly Endpoint[] = [
  'getInstallationCurrentEnergyFlow',
  'getInstallationDevices',
  'getInstallations',
];

const TARGETS: Record<Endpoint, number> = {
  getInstallationCurrentEnergyFlow: 0.7,
  getInstallationDevices: 0.5,
  getInstallations: 0.5,
};

export interface ReadServers {
  readonly api: Server;
  readonly baseline: Server;
  /** The miss baseline: one Redis read per request, no cache (bench/servers/one-read-server.ts). */
  readonly oneRead?: Server;
  readonly pairsFile: string;
}

const r = (loads: readonly MeasuredLoad[], pick: (m: MeasuredLoad) => number) =>
  spread(loads.map(pick));

export async function warmUp(ctx: BenchContext, servers: ReadServers): Promise<void> {
  for (const endpoint of ENDPOINTS) {
    for (const server of [servers.baseline, servers.api]) {
      await runLoad(
        ctx,
        'closed',
        { origin: server.origin, endpoint, pairsFile: servers.pairsFile, durationS: 2 },
        {},
      );
    }
  }
}

/** Returns the candidate's median req/s per endpoint (the open loop's reference). */
export async function closedLoopReads(
  ctx: BenchContext,
  servers: ReadServers,
  section = 'closed loop, 64 conns',
  endpoints: readonly Endpoint[] = ENDPOINTS,
  alternations = ctx.opts.alternations,
  /** False when the candidate is a reference (the one-read server), not the API. */
  withTargets = true,
): Promise<Map<Endpoint, number>> {
  const maxima = new Map<Endpoint, number>();
  for (const endpoint of endpoints) {
    const base: MeasuredLoad[] = [];
    const cand: MeasuredLoad[] = [];
    for (let i = 0; i < alternations; i++) {
      for (const [server, list, name] of [
        [servers.baseline, base, 'baseline'],
        [servers.api, cand, 'api'],
      ] as const) {
        const m = await runLoad(
          ctx,
          'closed',
          {
            origin: server.origin,
            endpoint,
            pairsFile: servers.pairsFile,
            durationS: ctx.opts.caseSeconds,
          },
          { [name]: server.child.pid, bench: 'self' },
        );
        if (m.result.non2xx > 0 || m.result.errors > 0) {
          ctx.notes.push(
            `${section} ${endpoint} ${name}: ${m.result.non2xx} non-2xx, ${m.result.errors} errors`,
          );
        }
        list.push(m);
      }
    }
    const candRps = r(cand, (m) => m.result.rps);
    const baseRps = r(base, (m) => m.result.rps);
    maxima.set(endpoint, candRps.median);
    const rows: Row[] = [
      {
        section,
        name: `${endpoint} req/s`,
        unit: 'req/s',
        candidate: candRps,
        baseline: baseRps,
        ratio: candRps.median / baseRps.median,
        ...(withTargets ? { target: `>= ${TARGETS[endpoint]}x` } : {}),
      },
      ...(['p50', 'p99', 'p999'] as const).map(
        (p): Row => ({
          section,
          name: `${endpoint} ${p === 'p999' ? 'p99.9' : p}`,
          unit: 'ms',
          candidate: r(cand, (m) => m.result[p]),
          baseline: r(base, (m) => m.result[p]),
          ...(p === 'p99' && withTargets ? { target: '<= 10 ms' } : {}),
        }),
      ),
      {
        section,
        name: `${endpoint} CPU (cores) api | generator | redis`,
        unit: 'cores',
        candidate: median(cand.map((m) => m.cpu.api as number)),
        baseline: median(base.map((m) => m.cpu.baseline as number)),
        note: `generator ${median(cand.map((m) => m.cpu.generator as number)).toFixed(2)}, redis ${median(cand.map((m) => m.cpu.redis as number)).toFixed(2)}, bench ${median(cand.map((m) => m.cpu.bench as number)).toFixed(2)}; api CPU/request ${((median(cand.map((m) => m.cpu.api as number)) / candRps.median) * 1e6).toFixed(0)} µs vs baseline ${((median(base.map((m) => m.cpu.baseline as number)) / baseRps.median) * 1e6).toFixed(0)} µs`,
      },
    ];
    for (const row of rows) {
      ctx.rows.push(row);
      printRow(row);
    }
  }
  return maxima;
}

export async function openLoopReads(
  ctx: BenchContext,
  servers: ReadServers,
  maxima: ReadonlyMap<Endpoint, number>,
): Promise<void> {
  const section = 'open loop';
  for (const endpoint of ENDPOINTS) {
    const max = maxima.get(endpoint) ?? 0;
    for (const share of [0.5, 0.8]) {
      const rate = Math.max(1, Math.floor(max * share));
      const run = (server: Server, name: string) =>
        runLoad(
          ctx,
          'open',
          {
            origin: server.origin,
            endpoint,
            pairsFile: servers.pairsFile,
            durationS: ctx.opts.openLoopSeconds,
            rate,
          },
          { [name]: server.child.pid },
        );
      const base = await run(servers.baseline, 'baseline');
      const cand = await run(servers.api, 'api');
      for (const p of ['p50', 'p99', 'p999'] as const) {
        const row: Row = {
          section,
          name: `${endpoint} @${share * 100}% of max (${rate} req/s) ${p === 'p999' ? 'p99.9' : p}`,
          unit: 'ms',
          candidate: cand.result[p],
          baseline: base.result[p],
          note:
            p === 'p50'
              ? `achieved ${cand.result.rps.toFixed(0)} vs ${base.result.rps.toFixed(0)} req/s; unfinished ${cand.result.backlog ?? 0}/${base.result.backlog ?? 0}; non-2xx ${cand.result.non2xx}; api ${(cand.cpu.api as number).toFixed(2)} cores`
              : undefined,
        };
        ctx.rows.push(row);
        printRow(row);
      }
    }
  }
}
