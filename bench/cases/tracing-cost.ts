import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { checkoutArg, numberArg, stringArg } from '../lib/options.js';
import { freePort, startChild, waitUntil } from '../lib/processes.js';
import { cannon, loadRunner, medianOf, pick, rpsList } from '../lib/side-by-side.js';
import type { Message } from '../lib/stack.js';
import { BASE_PATH as BASE } from '../lib/stack.js';
import { loadAverage, seedFlowModel, standalone, type Target } from '../lib/standalone.js';
import { median } from '../lib/stats.js';
import { telemetry, telemetryTopic } from '../lib/telemetry-topic.js';
import { type Counted, ingestInstructions, readInstructions } from '../lib/tracing-instructions.js';
import { rotated, spanSink, tracingSides } from '../lib/tracing-sides.js';

// Issue 42: what tracing costs. Reads (getInstallationCurrentEnergyFlow) and ingest (the
// consumer process draining pre-produced telemetry) with tracing off, on at 1 % and on at 100 %
// (tracing-sides.ts), sides alternating; `--pre DIR` adds the build without any tracing code,
// `--now DIR` takes the traced sides from another checkout than this one (both: `git worktree
// add DIR <commit>` inside this repository, node_modules symlinked in).
// Throughput (default): closed loop for reads, events per second for ingest; on a shared
// machine they move ±15 % between runs. `--instructions`: instructions per read and per event
// under callgrind (bench/lib/instructions.ts), which move well under 1 %: the CPU cost.
//   npx tsx bench/cases/tracing-cost.ts [--seconds 6] [--alternations 3] [--events 200000]
//     [--rounds 2] [--pre .local/pre-tracing] [--now .local/tracing-now]
//   npx tsx bench/cases/tracing-cost.ts --instructions [--reads 4000] [--warmup 20000] [--events 30000]
//     [--rounds 2] [--pre .local/pre-tracing] [--now .local/tracing-now] [--keep DIR]
//     [--only reads|ingest]

const INSTRUCTIONS = process.argv.includes('--instructions');
const INSTALLATIONS = numberArg('installations', 1_000);
const EVENTS = numberArg('events', INSTRUCTIONS ? 30_000 : 200_000);
const READS = numberArg('reads', 4_000);
/**
 * Reads before counting: V8 is still optimizing after a few thousand (its compiler was a quarter
 * of the count after 4,000), and compiling is start-up, not the cost of a read.
 */
const WARMUP = numberArg('warmup', 20_000);
const ROUNDS = numberArg('rounds', 2);
const PRE = checkoutArg('pre');
const NOW = checkoutArg('now') ?? '.';
/** `--keep DIR`: the measured spans' callgrind dumps stay there, for callgrind_annotate. */
const KEEP = stringArg('keep');
/** `--only reads` or `--only ingest`: one of the two. */
const ONLY = stringArg('only');

const sink = await spanSink();
const sides = tracingSides(sink.endpoint, NOW, PRE, { exportByBatchOnly: INSTRUCTIONS });
const names = Object.keys(sides);
const bench = standalone('tracing');
const insts = Array.from({ length: INSTALLATIONS }, (_, i) => installation(7000 + i));
const keys = [newApiKey(), newApiKey()];
try {
  console.log(`load before ${loadAverage()}; now ${NOW}, pre ${PRE ?? '(none)'}`);
  await seedFlowModel(bench.seed, insts, keys, {
    inverter: { powerAc: 1200 },
    battery: { soe: 55, powerDc: 300 },
    energyMeter: { powerAc: -400 },
  });
  if (INSTRUCTIONS) await instructions();
  else {
    await reads();
    await ingest();
  }
  console.log(`load after ${loadAverage()}`);
} finally {
  await bench.close();
  sink.close();
}

async function reads(): Promise<void> {
  const LOAD = loadRunner({ connections: 64 });
  const servers: Record<string, Target> = {};
  for (const [i, name] of names.entries()) {
    const side = sides[name] as (typeof sides)[string];
    servers[name] = await bench.api(18311 + i, side.env, join(side.dir, 'api/main.ts'));
  }
  const request = () => flowRead(pick(insts).id, pick(keys));
  // Warm up: JIT and the near-cache, every installation for every key.
  for (const server of Object.values(servers))
    await cannon(server.origin, request, { connections: 8, amount: 4 * INSTALLATIONS });
  const runs = await LOAD.alternate(
    Object.fromEntries(names.map((n) => [n, () => LOAD.run(servers[n] as Target, request)])),
  );
  const off = medianOf(runs.off ?? [], (r) => r.rps);
  for (const name of names) {
    const list = runs[name] ?? [];
    const rps = medianOf(list, (r) => r.rps);
    console.log(
      `reads ${name}: ${rps.toFixed(0)} req/s = ${(rps / off).toFixed(3)}x off; CPU/request ${medianOf(list, (r) => r.cpuUs).toFixed(0)} µs; p99 ${medianOf(list, (r) => r.p99)} ms [${rpsList(list)}]`,
    );
  }
}

function flowRead(id: number, key: string) {
  return {
    path: `${BASE}/getInstallationCurrentEnergyFlow?installationId=${id}`,
    headers: { 'api-key': key },
  };
}

async function ingest(): Promise<void> {
  const run = `tracing-${Date.now().toString(36)}`;
  const messages = telemetry(EVENTS, INSTALLATIONS);
  const rates: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of rotated(names, round))
      rates[name]?.push(await drain(messages, `${run}-${name}-${round}`, name));
  }
  const off = median(rates.off ?? []);
  for (const name of names) {
    const r = median(rates[name] ?? []);
    console.log(
      `ingest ${name}: ${r.toFixed(0)} events/s = ${(r / off).toFixed(3)}x off [${(rates[name] ?? []).map((x) => x.toFixed(0)).join(', ')}]`,
    );
  }
}

/** The consumer process of `side` draining a fresh topic of `messages`: events per second. */
async function drain(messages: Message[], id: string, name: string): Promise<number> {
  const side = sides[name] as (typeof sides)[string];
  const topic = await telemetryTopic(id);
  await topic.produce(messages, messages.length);
  const spawned = Date.now();
  const child = startChild({
    name: `consumers-${name}`,
    script: join(side.dir, 'consumers/main.ts'),
    env: { ...topic.env, ...side.env },
  });
  try {
    // Over the active span: from the first commit seen to the last, so start-up is not counted.
    let first = null as { at: number; committed: number } | null;
    let last = { at: 0, committed: 0 };
    await waitUntil(
      `${name} drains ${topic.topic}`,
      async () => {
        const committed = await topic.committed();
        if (committed > 0 && first === null) first = { at: Date.now(), committed };
        if (committed > last.committed) last = { at: Date.now(), committed };
        return committed >= messages.length;
      },
      600_000,
      child,
      50,
    );
    // All of it in the first commit seen (too few events): from the spawn, start-up included.
    const from = first !== null && first.at < last.at ? first : { at: spawned, committed: 0 };
    return (last.committed - from.committed) / ((last.at - from.at) / 1000);
  } finally {
    await child.stop();
    await topic.close(bench.redis);
  }
}

/** Instructions per read and per event of each side, `ROUNDS` times, sides rotating. */
async function instructions(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tracing-cost-'));
  console.log(`callgrind files and logs in ${dir}`);
  // The same requests in the same order on every side: each installation for each key.
  const sequence = (i: number) =>
    flowRead(
      (insts[i % insts.length] as (typeof insts)[number]).id,
      keys[Math.floor(i / insts.length) % keys.length] as string,
    );
  const readsOf = () => {
    let i = 0;
    return () => sequence(i++);
  };
  const run = `tracing-i-${Date.now().toString(36)}`;
  const messages = telemetry(2 * EVENTS, INSTALLATIONS);
  const counts: Record<'reads' | 'ingest', Record<string, Counted[]>> = {
    reads: Object.fromEntries(names.map((n) => [n, []])),
    ingest: Object.fromEntries(names.map((n) => [n, []])),
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of rotated(names, round)) {
      const where = { dir, keepDir: KEEP, name, side: sides[name] as (typeof sides)[string] };
      if (ONLY !== 'ingest') {
        const r = await readInstructions(
          where,
          // A free port: a fixed one may be another run's, answering in its place.
          { port: await freePort(), prefix: bench.prefix },
          readsOf(),
          {
            warmup: WARMUP,
            count: READS,
            connections: 4,
          },
        );
        counts.reads[name]?.push(r);
        console.log(`  round ${round} reads ${name}: ${line(r)}`);
      }
      if (ONLY === 'reads') continue;
      const topic = await telemetryTopic(`${run}-${name}-${round}`);
      try {
        // Half warms up (V8 optimizing, as for reads), the other half (EVENTS) is counted.
        const c = await ingestInstructions(
          where,
          topic,
          messages.slice(0, messages.length - EVENTS),
          messages.slice(messages.length - EVENTS),
        );
        counts.ingest[name]?.push(c);
        console.log(`  round ${round} ingest ${name}: ${line(c)}`);
      } finally {
        await topic.close(bench.redis);
      }
    }
  }
  // Kept when a side failed: its log says why.
  rmSync(dir, { recursive: true, force: true });
  for (const [what, unit] of [
    ['reads', 'request'],
    ['ingest', 'event'],
  ] as const) {
    if (ONLY !== null && ONLY !== what) continue;
    // Counted as measured: the idle estimate moves with what its 5 s window happened to catch
    // (an export, a GC), so it is shown beside the count, not taken off it.
    // Beside it, the count without V8's optimizing compilers: warm-up left in the span.
    const figures = (steady: boolean) => (name: string) =>
      median(
        (counts[what][name] ?? []).map((c) => c.perUnit * (steady ? 1 - c.compilingShare : 1)),
      );
    for (const name of names) {
      const list = counts[what][name] ?? [];
      const text = [false, true].map((steady) => {
        const per = figures(steady);
        const ratios = [`${(per(name) / per('off')).toFixed(3)}x off`];
        if (PRE !== null) ratios.push(`${(per(name) / per('pre')).toFixed(3)}x pre`);
        return `${per(name).toFixed(0)} = ${ratios.join(', ')}`;
      });
      console.log(
        `${what} ${name}: ${text[0]} instructions/${unit}; without compiling ${text[1]} [${list.map(line).join('; ')}]`,
      );
    }
  }
}

function line(c: Counted): string {
  const spoiled = c.spoiled ? ` SPOILED: ${c.spoiled}` : '';
  const pct = (share: number) => `${(100 * share).toFixed(1)} %`;
  return `${c.perUnit.toFixed(0)} (compiling ${pct(c.compilingShare)}, idle ~${pct(c.idleShare)})${spoiled}`;
}
