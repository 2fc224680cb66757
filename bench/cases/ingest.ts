import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRng } from '../../tools/sim/random.js';
import { type BareClient, type BenchContext, startBareConsumer } from '../lib/context.js';
import { cpuSecondsOf } from '../lib/cpu.js';
import { type FreshnessResult, POLL_BATCH, POLL_MS, startFreshness } from '../lib/freshness.js';
import { rssMiB } from '../lib/processes.js';
import { printRow, type Row } from '../lib/report.js';
import { produceAll } from '../lib/stack.js';
import { spread } from '../lib/stats.js';
import {
  type ConsumerStart,
  type Consumption,
  createTelemetryTopic,
  type IngestSetup,
  liveMessages,
  measureConsumption,
  startLiveConsumer,
  startTelemetryConsumer,
} from '../lib/telemetry-ingest.js';
import { REFERENCE_NAME, referenceDir } from './ingest-reference.js';
import { startReferenceConsumer } from './reference-consumer.js';

// Ingest cases: throughput of the project's consumer process against a bare kafkajs consumer on
// the same topic (alternating), the bare consumer on @platformatic/kafka against the kafkajs one,
// then produce-to-visible freshness at 50 % of the consumer process's maximum, beside the
// reference projector of ../shared/ingest-ref on the same traffic when that folder is present.

/** Redis INFO commandstats: calls per command (commands run inside scripts count too). */
async function commandCalls(ctx: BenchContext): Promise<Map<string, number>> {
  const info = (await ctx.redis.info('commandstats')) as string;
  const out = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    out.set(m[1] as string, Number(m[2]));
  return out;
}

function callsSince(before: Map<string, number>, after: Map<string, number>) {
  let total = 0;
  let scripts = 0;
  for (const [name, calls] of after) {
    if (name === 'info') continue;
    const delta = calls - (before.get(name) ?? 0);
    total += delta;
    if (name === 'evalsha' || name === 'eval') scripts += delta;
  }
  return { total, scripts };
}

/** Runs a bare consumer (`bench/servers/`) on `topic` in a fresh group until it has committed `total`. */
async function runBareConsumer(
  ctx: BenchContext,
  client: BareClient,
  topic: string,
  group: string,
  total: number,
): Promise<Consumption> {
  const outFile = join(ctx.dir, `${group}.json`);
  const bare = startBareConsumer(ctx, topic, group, total, outFile, client);
  const code = await new Promise<number | null>((r) => bare.process.once('exit', r));
  if (code !== 0) throw new Error(`bare ${client} consumer failed (exit ${code}); see ${ctx.dir}`);
  const own = JSON.parse(readFileSync(outFile, 'utf8')) as {
    rate: number;
    seconds: number;
    cpuSeconds: number;
  };
  // Its whole life's CPU over its consuming span: an upper bound, start-up and join included.
  return { rate: own.rate, seconds: own.seconds, cores: own.cpuSeconds / own.seconds };
}

export async function ingestThroughput(ctx: BenchContext, setup: IngestSetup): Promise<number> {
  const section = 'ingest';
  const rng = createRng(ctx.opts.seed + 99);
  const base: Consumption[] = [];
  const cand: Consumption[] = [];
  const platformatic: Consumption[] = [];
  const perEvent: number[] = [];
  const scriptsPerEvent: number[] = [];
  const memory: number[] = [];
  const total = ctx.opts.ingestEvents;
  for (let i = 0; i < ctx.opts.alternations; i++) {
    const topic = await createTelemetryTopic(ctx, `ingest-${i}`);
    const messages = liveMessages(setup.workload, total, Date.now(), rng);
    const installations = new Set(messages.map((m) => m.key)).size;
    await produceAll(ctx.kafka.producer, topic, messages);

    // The two bare clients take turns going first, each in its own fresh group on the same topic.
    const clients: BareClient[] =
      i % 2 === 0 ? ['kafkajs', 'platformatic'] : ['platformatic', 'kafkajs'];
    for (const client of clients) {
      const measured = await runBareConsumer(
        ctx,
        client,
        topic,
        `bench-${ctx.runId}-bare-${client}-${i}`,
        total,
      );
      (client === 'kafkajs' ? base : platformatic).push(measured);
    }

    const consumer = await startTelemetryConsumer(ctx, setup, `ingest-${i}`, topic);
    const rss0 = rssMiB(consumer.child.pid);
    const calls0 = await commandCalls(ctx);
    const measured = await measureConsumption(
      ctx,
      consumer.group,
      topic,
      total,
      [consumer.child],
      performance.now(),
    );
    const calls = callsSince(calls0, await commandCalls(ctx));
    perEvent.push(calls.total / total);
    scriptsPerEvent.push(calls.scripts / total);
    // Every installation met is held (the bound is per partition and above the workload).
    memory.push(((rssMiB(consumer.child.pid) - rss0) * 1024 * 1024) / installations);
    cand.push(measured);
    await consumer.child.stop();
    console.log(
      `  ingest run ${i + 1}: bare kafkajs ${base.at(-1)?.rate.toFixed(0)} ev/s, bare @platformatic/kafka ${platformatic.at(-1)?.rate.toFixed(0)} ev/s, consumers ${cand.at(-1)?.rate.toFixed(0)} ev/s`,
    );
  }
  const c = spread(cand.map((x) => x.rate));
  const b = spread(base.map((x) => x.rate));
  const p = spread(platformatic.map((x) => x.rate));
  const cores = (runs: readonly Consumption[]) =>
    spread(runs.map((x) => x.cores)).median.toFixed(2);
  // A bare consumer's CPU is its whole life's: in seconds, as its start-up can outweigh a short run.
  const cpu = (runs: readonly Consumption[]) =>
    spread(runs.map((x) => x.cores * x.seconds)).median.toFixed(2);
  const rows: Row[] = [
    {
      section,
      name: `device.state events/s, group joined to last commit (${total} live updates per run)`,
      unit: 'events/s',
      candidate: c,
      baseline: b,
      ratio: c.median / b.median,
      target: '>= 40000 events/s, >= 0.2x',
      note: `consumer process ${cores(cand)} cores while consuming; bare consumer ${spread(base.map((x) => x.seconds)).median.toFixed(2)} s per run (times itself from GROUP_JOIN); consumer process timed from /readyz (polled every 50 ms)`,
    },
    {
      section,
      name: `bare consumer events/s, @platformatic/kafka vs kafkajs (same topics, fresh groups, ${total} per run)`,
      unit: 'events/s',
      candidate: p,
      baseline: b,
      ratio: p.median / b.median,
      note: `both discard and commit by hand after each batch (kafkajs: eachBatch, one commit per partition batch; @platformatic/kafka: stream, one commit per fetch, fetching on meanwhile; kafkajs' fetch sizes for both), timed from joining the group; CPU per run, whole life (start-up included): @platformatic/kafka ${cpu(platformatic)} s, kafkajs ${cpu(base)} s`,
    },
    {
      section,
      name: 'Redis commands per event (INFO commandstats, commands inside scripts included)',
      unit: 'commands',
      candidate: spread(perEvent),
      target: '<= 0.5',
      note: `of which script calls (EVALSHA) ${spread(scriptsPerEvent).median.toFixed(3)} per event; gateways report all of an installation's devices in a row (${setup.workload.deviceCount / setup.workload.installationCount} devices per installation on average)`,
    },
    {
      section,
      name: 'consumer memory per owned installation (RSS growth over the run / installations met)',
      unit: 'bytes',
      candidate: spread(memory),
      note: 'RSS includes V8 heap headroom and garbage not yet collected: an upper bound',
    },
  ];
  for (const row of rows) {
    ctx.rows.push(row);
    printRow(row);
  }
  return c.median;
}

/**
 * The sides of a freshness comparison: the project's consumer (startLiveConsumer's default
 * start), and the reference, started by `start`, when present.
 */
export function freshnessSides(
  ctx: BenchContext,
  setup: IngestSetup,
  name: string,
): Array<{ side: 'project' | 'reference'; prefix: string; start?: ConsumerStart }> {
  const project = { side: 'project' as const, prefix: setup.prefix };
  if (referenceDir() === null) return [project];
  // Under the run's prefix, which the run drops at its end.
  const prefix = `bench:${ctx.runId}:${name}-reference:`;
  const reference = {
    side: 'reference' as const,
    prefix,
    start: (topic: string) =>
      startReferenceConsumer(ctx, setup.workload, setup.prefix, prefix, `${name}-reference`, topic),
  };
  return [project, reference];
}

/**
 * Freshness at 10 % and 50 % of the consumer process's max ingest, for the project's consumer
 * and, on the same traffic (same seed, same rates), for the reference projector.
 */
export async function freshness(
  ctx: BenchContext,
  setup: IngestSetup,
  maxIngest: number,
): Promise<void> {
  // 10 % as well: shows whether latency comes from load or from fixed costs per fetch cycle.
  const shares = [0.1, 0.5] as const;
  const samples = new Map<string, { f: FreshnessResult; cores: number }>();
  for (const { side, prefix, start } of freshnessSides(ctx, setup, 'live')) {
    const live = await startLiveConsumer(ctx, setup, `live-${side}`, start);
    try {
      for (const share of shares) {
        const rate = Math.max(10, Math.floor(maxIngest * share));
        const cpu0 = cpuSecondsOf(live.child.pid);
        const t0 = performance.now();
        const run = startFreshness(ctx, setup.workload, prefix, live.topic, rate);
        await new Promise((r) => setTimeout(r, ctx.opts.freshnessSeconds * 1000));
        const f = await run.stop();
        const cores = (cpuSecondsOf(live.child.pid) - cpu0) / ((performance.now() - t0) / 1000);
        samples.set(`${side} ${share}`, { f, cores });
      }
    } finally {
      await live.child.stop();
    }
  }
  for (const share of shares) {
    const project = samples.get(`project ${share}`);
    const reference = samples.get(`reference ${share}`);
    if (project === undefined) continue;
    const about = (s: { f: FreshnessResult; cores: number }) =>
      `${s.f.rate.toFixed(0)} events/s produced; ${s.f.probes} probes, ${s.f.unseen} unseen; max ${s.f.max.toFixed(0)} ms; consumer ${s.cores.toFixed(2)} cores`;
    freshnessRows(ctx, {
      section: `freshness @${share * 100}% of max ingest`,
      project: project.f,
      reference: reference?.f,
      note: `${about(project)}${reference ? `; reference: ${about(reference)}` : ''}; 1 in 10 events probed, oldest ${POLL_BATCH} polled every ${POLL_MS} ms`,
      target: share === 0.5 ? '<= 100 ms' : undefined,
    });
  }
}

/**
 * The p50 (with the note) and p99 (with the target, if any) rows of a freshness sample: the
 * project's consumer, beside the reference (baseline) on the same traffic when it ran.
 */
export function freshnessRows(
  ctx: BenchContext,
  s: {
    section: string;
    when?: string;
    project: FreshnessResult;
    reference: FreshnessResult | undefined;
    note: string;
    target: string | undefined;
  },
): void {
  for (const p of ['p50', 'p99'] as const) {
    const { project, reference } = s;
    const row: Row = {
      section: s.section,
      name: `produce-to-visible ${p}${s.when ? ` ${s.when}` : ''}`,
      unit: 'ms',
      candidate: project[p],
      ...(reference ? { baseline: reference[p], ratio: project[p] / reference[p] } : {}),
      ...(p === 'p99' && s.target ? { target: s.target } : {}),
      note:
        p === 'p50' ? `${s.note}${reference ? `; baseline: ${REFERENCE_NAME}` : ''}` : undefined,
    };
    ctx.rows.push(row);
    printRow(row);
  }
}
