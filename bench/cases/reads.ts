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

/** A server the API is measured against round by round (issue 38): no cache, one read a request. */
export interface Reference {
  readonly server: Server;
  /** As its rows name it. */
  readonly name: string;
  /** Of the API / reference ratio, when the API is held to one. */
  readonly target?: string;
}

export interface ReadServers {
  readonly api: Server;
  readonly baseline: Server;
  /** The miss baselines (bench/servers/one-read-server.ts): one read, and one read with the contract's work. */
  readonly references: readonly Reference[];
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

/** A server under load in an alternation, whose CPU it is counted as, and its name in notes. */
type Side = readonly [server: Server, role: 'baseline' | 'api', list: MeasuredLoad[], name: string];

/**
 * Returns the candidate's median req/s per endpoint (the open loop's reference).
 * `references` run in the same rounds (B C R1 R2 B C R1 R2 …), their rows follow the API's, and
 * a row each gives the API / reference ratio paired per round: under ingest the load moves from
 * minute to minute, and only runs side by side compare.
 */
export async function closedLoopReads(
  ctx: BenchContext,
  servers: ReadServers,
  section = 'closed loop, 64 conns',
  endpoints: readonly Endpoint[] = ENDPOINTS,
  alternations = ctx.opts.alternations,
  references: readonly Reference[] = [],
): Promise<Map<Endpoint, number>> {
  const maxima = new Map<Endpoint, number>();
  for (const endpoint of endpoints) {
    const base: MeasuredLoad[] = [];
    const cand: MeasuredLoad[] = [];
    const refs = references.map((reference) => ({ reference, loads: [] as MeasuredLoad[] }));
    const sides: Side[] = [
      [servers.baseline, 'baseline', base, 'baseline'],
      [servers.api, 'api', cand, 'api'],
      ...refs.map(({ reference, loads }): Side => [reference.server, 'api', loads, reference.name]),
    ];
    for (let i = 0; i < alternations; i++) {
      for (const [server, role, list, name] of sides) {
        const m = await runLoad(
          ctx,
          'closed',
          {
            origin: server.origin,
            endpoint,
            pairsFile: servers.pairsFile,
            durationS: ctx.opts.caseSeconds,
          },
          { [role]: server.child.pid, bench: 'self' },
        );
        if (m.result.non2xx > 0 || m.result.errors > 0) {
          ctx.notes.push(
            `${section} ${endpoint} ${name}: ${m.result.non2xx} non-2xx, ${m.result.errors} errors`,
          );
        }
        list.push(m);
      }
    }
    maxima.set(endpoint, r(cand, (m) => m.result.rps).median);
    const rows = loadRows(section, endpoint, cand, base, true);
    const pairedRow = (of: string, over: string, a: MeasuredLoad[], b: MeasuredLoad[]): Row => {
      const paired = a.map((m, i) => m.result.rps / (b[i] as MeasuredLoad).result.rps);
      const name = `${endpoint} req/s, ${of} / ${over}, paired per round`;
      return { section, name, unit: 'x', candidate: spread(paired), ratio: median(paired) };
    };
    const first = refs[0];
    for (const { reference, loads } of refs) {
      rows.push(
        {
          ...pairedRow('API', reference.name, cand, loads),
          ...(reference.target === undefined ? {} : { target: reference.target }),
        },
        ...loadRows(`${section}, ${reference.name}`, endpoint, loads, base, false),
      );
      // The later references against the first: what each one's extra work costs by itself.
      if (first && loads !== first.loads)
        rows.push(pairedRow(reference.name, first.reference.name, loads, first.loads));
    }
    for (const row of rows) {
      ctx.rows.push(row);
      printRow(row);
    }
  }
  return maxima;
}

/** Throughput, latency and CPU of `cand` against `base`; `withTargets` false for a reference. */
function loadRows(
  section: string,
  endpoint: Endpoint,
  cand: readonly MeasuredLoad[],
  base: readonly MeasuredLoad[],
  withTargets: boolean,
): Row[] {
  const candRps = r(cand, (m) => m.result.rps);
  const baseRps = r(base, (m) => m.result.rps);
  const cores = (loads: readonly MeasuredLoad[], role: string) =>
    median(loads.map((m) => m.cpu[role] as number));
  return [
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
      candidate: cores(cand, 'api'),
      baseline: cores(base, 'baseline'),
      note: `generator ${cores(cand, 'generator').toFixed(2)}, redis ${cores(cand, 'redis').toFixed(2)}, bench ${cores(cand, 'bench').toFixed(2)}; api CPU/request ${((cores(cand, 'api') / candRps.median) * 1e6).toFixed(0)} µs vs baseline ${((cores(base, 'baseline') / baseRps.median) * 1e6).toFixed(0)} µs`,
    },
  ];
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
