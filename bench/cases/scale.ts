import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type BenchContext,
  runLoad,
  type Server,
  startApi,
  startOneReadServer,
} from '../lib/context.js';
import { rssMiB } from '../lib/processes.js';
import { printRow, type Row } from '../lib/report.js';
import { dropPrefix, usedMemory, waitForQuietRedis } from '../lib/stack.js';
import { spread } from '../lib/stats.js';
import { pinTarget } from '../lib/wrk.js';
import type { Endpoint, Pattern } from '../load/load-spec.js';
import { writeReadModel } from '../workload/direct-write.js';
import { createWorkload } from '../workload/plan.js';

// Read throughput against read models of 1k, 100k and 1M devices, written straight into Redis
// (not through Kafka, to bound setup time), and Redis memory per device of each. Each size is
// read in three patterns (uniform, round-robin over the whole fleet, Zipf 0.99), by the API on
// its defaults, by one with the near-cache off and by the miss baseline (one Redis read per
// request, no cache: bench/servers/one-read-server.ts), alternating (issue 38).

const ENDPOINT: Endpoint = 'getInstallationCurrentEnergyFlow';
const AVERAGE_DEVICES = 10.5; // 1-20 per installation, uniform

interface Dataset {
  readonly devices: number;
  readonly prefix: string;
  /** The API on its defaults, with the near-cache off, and the one-read baseline. */
  readonly on: Server;
  readonly off: Server;
  readonly r: Server;
  readonly pairsFile: string;
}

const PATTERNS: readonly Pattern[] = ['uniform', 'round-robin', 'zipf'];
const SIDES = ['on', 'off', 'r'] as const;
type Side = (typeof SIDES)[number];

export async function scaleCases(ctx: BenchContext): Promise<void> {
  const datasets: Dataset[] = [];
  for (const target of ctx.opts.scaleDevices) {
    const prefix = `bench:${ctx.runId}:s${target}:`;
    ctx.cleanups.push(async () => {
      await dropPrefix(ctx.redis, prefix);
    });
    const w = createWorkload(ctx.opts.seed, Math.max(1, Math.round(target / AVERAGE_DEVICES)));
    await waitForQuietRedis(ctx.redis);
    const before = await usedMemory(ctx.redis);
    const t0 = performance.now();
    await writeReadModel(ctx.redis, prefix, w, Date.now());
    const buildS = (performance.now() - t0) / 1000;
    const after = await usedMemory(ctx.redis);
    const row: Row = {
      section: 'memory (read model written directly)',
      name: `${w.deviceCount.toLocaleString('en-US')} devices / ${w.installationCount.toLocaleString('en-US')} installations: used_memory delta per device`,
      unit: 'bytes',
      candidate: (after - before) / w.deviceCount,
      target: '<= 1,536 bytes',
      note: `delta ${((after - before) / 1048576).toFixed(1)} MiB incl. installations, flows, acl, application views; built in ${buildS.toFixed(1)} s`,
    };
    ctx.rows.push(row);
    printRow(row);
    const pairsFile = join(ctx.dir, `pairs-s${target}.json`);
    writeFileSync(pairsFile, JSON.stringify(w.pairs));
    const on = await startApi(ctx, `api-s${target}`, prefix);
    const off = await startApi(ctx, `api-s${target}-off`, prefix, [], {
      API_NEAR_CACHE_ENTRIES: '0',
    });
    const r = await startOneReadServer(ctx, `one-read-s${target}`, prefix, w.apps);
    // The servers on CPU 1 (one serves at a time), the generator on CPU 0, as the wrk cases:
    // every side then runs where the others did, wherever the scheduler would have put them.
    for (const server of [on, off, r]) pinTarget(server.child.pid);
    datasets.push({ devices: w.deviceCount, prefix, on, off, r, pairsFile });
  }
  await waitForQuietRedis(ctx.redis);
  const run = (d: Dataset, side: Side, pattern: Pattern, durationS: number) =>
    runLoad(
      ctx,
      'closed',
      { origin: d[side].origin, endpoint: ENDPOINT, pairsFile: d.pairsFile, durationS, pattern },
      { api: d[side].child.pid, main: `main:${d[side].child.pid}` },
      { pinGenerator: true },
    );
  // Warm-up: JIT and script caches, on both sides.
  for (const d of datasets) for (const side of SIDES) await run(d, side, 'uniform', 2);
  // Cells of each length (`--scale-seconds`): a short one after another pattern counts warming.
  for (const timing of ctx.opts.scaleCells) {
    const cells = ctx.opts.scaleCells.length > 1 ? `, ${timing.seconds} s cells` : '';
    // dataset -> pattern -> side -> runs
    const results = new Map<number, Map<Pattern, Record<Side, Runs>>>();
    for (let i = 0; i < timing.alternations; i++) {
      for (const pattern of PATTERNS) {
        for (const d of datasets) {
          // Each side takes each place in turn: a place (after which server, Redis and the
          // caches in what state) must not favour one side across the alternations.
          for (const side of rotated(SIDES, i)) {
            const before = side === 'on' ? await nearCacheCounts(d.on.origin) : null;
            const gcBefore = side === 'r' ? null : await gcSeconds(d[side].origin);
            const m = await run(d, side, pattern, timing.seconds);
            if (m.result.non2xx > 0)
              ctx.notes.push(`scale ${d.devices} ${pattern} ${side}: ${m.result.non2xx} non-2xx`);
            const byPattern = results.get(d.devices) ?? new Map();
            results.set(d.devices, byPattern);
            const cell = byPattern.get(pattern) ?? { on: runs(), off: runs(), r: runs() };
            byPattern.set(pattern, cell);
            cell[side].rps.push(m.result.rps);
            cell[side].p99.push(m.result.p99);
            cell[side].cpuUs.push(((m.cpu.api ?? 0) / m.result.rps) * 1e6);
            cell[side].mainUs.push(((m.cpu.main ?? 0) / m.result.rps) * 1e6);
            if (gcBefore !== null) {
              const gcAfter = await gcSeconds(d[side].origin);
              cell[side].gcMsPerS.push(((gcAfter - gcBefore) / timing.seconds) * 1000);
            }
            if (before !== null) {
              const after = await nearCacheCounts(d.on.origin);
              const lookups = after.hit + after.miss - before.hit - before.miss;
              const bypassed = after.bypassed - before.bypassed;
              cell.on.hitRatio.push((after.hit - before.hit) / lookups);
              cell.on.bypassedRatio.push(bypassed / (lookups + bypassed));
              cell.on.warmsPerS.push((after.warmed - before.warmed) / timing.seconds);
            }
          }
        }
      }
    }
    const smallest = datasets[0] as Dataset;
    for (const pattern of PATTERNS) {
      const reference = spread(results.get(smallest.devices)?.get(pattern)?.on.rps ?? []);
      const oneReadReference = spread(results.get(smallest.devices)?.get(pattern)?.r.rps ?? []);
      for (const d of datasets) {
        const cell = results.get(d.devices)?.get(pattern);
        if (!cell) continue;
        const on = spread(cell.on.rps);
        const off = spread(cell.off.rps);
        const r = spread(cell.r.rps);
        const pairs = spread(cell.on.rps.map((rps, i) => rps / (cell.off.rps[i] as number)));
        const size = `${d.devices.toLocaleString('en-US')} devices`;
        const rows: Row[] = [
          {
            section: 'scale',
            name: `${ENDPOINT} req/s at ${size}, ${pattern} (ratio to ${smallest.devices.toLocaleString('en-US')})${cells}`,
            unit: 'req/s',
            candidate: on,
            baseline: reference,
            ratio: on.median / reference.median,
            target: d === smallest ? undefined : '>= 0.9x',
            note: `p99 ${spread(cell.on.p99).median.toFixed(2)} ms`,
          },
          {
            section: 'scale',
            name: `${ENDPOINT} req/s at ${size}, ${pattern}: defaults against the near-cache off${cells}`,
            unit: 'req/s',
            candidate: on,
            baseline: off,
            // Paired: the machine's drift over a run moves both sides of an alternation alike.
            ratio: pairs.median,
            target: '>= 0.95x',
            note: `ratio per alternation ${pairs.min.toFixed(2)}-${pairs.max.toFixed(2)}x (${pairs.runs}), of the medians ${(on.median / off.median).toFixed(2)}x; p99 ${spread(cell.on.p99).median.toFixed(2)} / ${spread(cell.off.p99).median.toFixed(2)} ms; API CPU per request ${us(cell.on)} / ${us(cell.off)} µs (main thread ${mainUs(cell.on)} / ${mainUs(cell.off)}); in GC pauses ${gcMs(cell.on)} / ${gcMs(cell.off)} ms per s; near-cache hits ${(100 * spread(cell.on.hitRatio).median).toFixed(1)} % of lookups, ${(100 * spread(cell.on.bypassedRatio).median).toFixed(0)} % of reads past it, ${spread(cell.on.warmsPerS).median.toFixed(0)} warms/s (medians)`,
          },
          {
            section: 'scale',
            name: `one-read baseline req/s at ${size}, ${pattern} (ratio to ${smallest.devices.toLocaleString('en-US')}): what no cache allows${cells}`,
            unit: 'req/s',
            candidate: r,
            baseline: oneReadReference,
            ratio: r.median / oneReadReference.median,
            note: `defaults / one-read ${(on.median / r.median).toFixed(2)}x, near-cache off / one-read ${(off.median / r.median).toFixed(2)}x; p99 ${spread(cell.r.p99).median.toFixed(2)} ms; CPU per request ${us(cell.r)} µs (main thread ${mainUs(cell.r)})`,
          },
        ];
        for (const row of rows) {
          ctx.rows.push(row);
          printRow(row);
        }
      }
    }
  }
  for (const d of datasets) {
    // What each server holds after the runs: the defaults' near-cache is bounded in bytes.
    const [on, off, r] = SIDES.map((side) => rssMiB(d[side].child.pid)) as [number, number, number];
    const cached = await nearCacheHolds(d.on.origin);
    const row: Row = {
      section: 'memory (read model written directly)',
      name: `${d.devices.toLocaleString('en-US')} devices: API resident memory after the runs, defaults against the near-cache off`,
      unit: 'MiB',
      candidate: on,
      baseline: off,
      ratio: on / off,
      note: `one-read server ${r.toFixed(0)} MiB; the near-cache counts ${(cached.bytes / 1048576).toFixed(1)} MiB in ${cached.entries} entries`,
    };
    ctx.rows.push(row);
    printRow(row);
  }
  for (const d of datasets) for (const side of SIDES) await d[side].child.stop();
  for (const d of datasets) await dropPrefix(ctx.redis, d.prefix);
}

const rotated = <T>(list: readonly T[], by: number): T[] =>
  list.map((_, i) => list[(i + by) % list.length] as T);

interface Runs {
  readonly rps: number[];
  readonly p99: number[];
  /** The server's CPU per request, µs: all its threads, and its main thread alone. */
  readonly cpuUs: number[];
  readonly mainUs: number[];
  /** Time in garbage-collection pauses per second of the run, ms (the APIs only). */
  readonly gcMsPerS: number[];
  /** The near-cache's, during each run (defaults only). */
  readonly hitRatio: number[];
  /** Of the reads, those sent past the near-cache while it was out of the way. */
  readonly bypassedRatio: number[];
  readonly warmsPerS: number[];
}

const runs = (): Runs => ({
  rps: [],
  p99: [],
  cpuUs: [],
  mainUs: [],
  gcMsPerS: [],
  hitRatio: [],
  bypassedRatio: [],
  warmsPerS: [],
});
const us = (r: Runs) => spread(r.cpuUs).median.toFixed(0);
const mainUs = (r: Runs) => spread(r.mainUs).median.toFixed(0);
const gcMs = (r: Runs) => spread(r.gcMsPerS).median.toFixed(0);

/** The API's near-cache metrics (api/ops/near-cache-metrics.ts), from its /metrics. */
async function nearCacheMetrics(origin: string): Promise<(pattern: RegExp) => number> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  return (pattern) => Number(pattern.exec(text)?.[1] ?? Number.NaN);
}

async function nearCacheCounts(
  origin: string,
): Promise<{ hit: number; miss: number; bypassed: number; warmed: number }> {
  const count = await nearCacheMetrics(origin);
  return {
    hit: count(/^api_near_cache_lookups_total\{result="hit"\} (\d+)/m),
    miss: count(/^api_near_cache_lookups_total\{result="miss"\} (\d+)/m),
    bypassed: count(/^api_near_cache_lookups_total\{result="bypassed"\} (\d+)/m),
    warmed: count(/^api_near_cache_changes_total\{change="warmed"\} (\d+)/m),
  };
}

/** Seconds the API's main thread spent in GC pauses so far, every kind (prom-client's series). */
async function gcSeconds(origin: string): Promise<number> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  let sum = 0;
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_sum\{kind="\w+"\} ([\d.e+-]+)/gm))
    sum += Number(m[1]);
  return sum;
}

async function nearCacheHolds(origin: string): Promise<{ entries: number; bytes: number }> {
  const gauge = await nearCacheMetrics(origin);
  return {
    entries: gauge(/^api_near_cache_entries (\d+)/m),
    bytes: gauge(/^api_near_cache_bytes (\d+)/m),
  };
}
