import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { topicSpecs } from '../../consumers/kafka/topics.js';
import { groupIdOf } from '../../src/consumer-groups.js';
import { createKeys, deviceField } from '../../src/read-model/keys.js';
import { createRng, type Rng } from '../../tools/sim/random.js';
import {
  type BareClient,
  type BenchContext,
  type ConsumerTopics,
  startBareConsumer,
  startConsumerProcess,
} from '../lib/context.js';
import { cpuSecondsOf } from '../lib/cpu.js';
import { type Child, rssMiB } from '../lib/processes.js';
import { printRow, type Row } from '../lib/report.js';
import { type Message, produceAll } from '../lib/stack.js';
import { Samples, spread, summarizeLatencies } from '../lib/stats.js';
import { liveState, stateEvent } from '../workload/device-state.js';
import type { Workload } from '../workload/plan.js';
import { REFERENCE_NAME, referenceDir } from './ingest-reference.js';
import { startReferenceConsumer } from './reference-consumer.js';

// Ingest cases: throughput of the project's consumer process against a bare kafkajs consumer on
// the same topic (alternating), the bare consumer on @platformatic/kafka against the kafkajs one,
// then produce-to-visible freshness at 50 % of the consumer process's maximum, beside the
// reference projector of ../shared/ingest-ref on the same traffic when that folder is present.

/** The oldest pending probes polled per round, and the round's period. */
const POLL_BATCH = 32;
const POLL_MS = 5;

/** As many partitions as the project gives its telemetry topic. */
export const TELEMETRY_PARTITIONS =
  topicSpecs({ installations: 'i', telemetry: 't', access: 'a', deadletter: 'd' })[1]
    ?.numPartitions ?? 6;

export interface IngestSetup {
  readonly workload: Workload;
  readonly prefix: string;
  /** Empty topics for the installations and access consumers of an ingest-only process. */
  readonly quietTopics: Omit<ConsumerTopics, 'telemetry'>;
}

/** A fresh topic `bench-<run>-<name>` with the telemetry topic's partitions, deleted at the end. */
export async function createTelemetryTopic(ctx: BenchContext, name: string): Promise<string> {
  const topic = `bench-${ctx.runId}-${name}`;
  await ctx.kafka.createTopic(topic, TELEMETRY_PARTITIONS);
  ctx.cleanups.push(() => ctx.kafka.deleteTopics([topic]));
  return topic;
}

/**
 * The consumer process `consumers-<name>` on `topic` (the other topics quiet), in group
 * `bench-<run>-<name>`; `group` is its telemetry consumer group, whose commits measure it.
 */
export async function startTelemetryConsumer(
  ctx: BenchContext,
  setup: IngestSetup,
  name: string,
  topic: string,
): Promise<{ child: Child; group: string }> {
  const group = `bench-${ctx.runId}-${name}`;
  const { child } = await startConsumerProcess(
    ctx,
    `consumers-${name}`,
    setup.prefix,
    { ...setup.quietTopics, telemetry: topic },
    group,
  );
  return { child, group: groupIdOf({ consumer: { groupId: group } }, 'telemetry') };
}

/**
 * Live updates as gateways send them: a random installation reports every device it has, one
 * event per device, one after the other (keyed by installation), then another installation.
 */
export function liveMessages(w: Workload, count: number, baseMs: number, rng: Rng): Message[] {
  const out: Message[] = [];
  while (out.length < count) {
    const inst = rng.int(1, w.installationCount);
    const observed = baseMs + Math.floor((out.length * 1_000) / count);
    for (const device of w.devicesOf(inst)) {
      if (out.length === count) break;
      const event = stateEvent(inst, device, observed, liveState(rng, device.category));
      out.push({ key: String(inst), value: JSON.stringify(event) });
    }
  }
  return out;
}

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

export interface Consumption {
  /** events/s from joining the group (ready) to the commit that completes the topic. */
  readonly rate: number;
  readonly seconds: number;
  readonly cores: number;
}

/**
 * Polls the group's committed offsets until it has consumed `total`; the rate counts from
 * `readyAt` (the process reported ready, i.e. its consumers had joined their groups).
 */
export async function measureConsumption(
  ctx: BenchContext,
  group: string,
  topic: string,
  total: number,
  children: readonly Child[],
  readyAt: number,
): Promise<Consumption> {
  const cpu = () => children.reduce((sum, c) => sum + cpuSecondsOf(c.pid), 0);
  const cpu0 = cpu();
  const deadline = Date.now() + 600_000;
  while (Date.now() < deadline) {
    for (const child of children)
      if (child.process.exitCode !== null) throw new Error(`${child.name} exited during ingest`);
    const committed = await ctx.kafka.committed(group, topic);
    if (committed >= total) {
      const seconds = (performance.now() - readyAt) / 1000;
      const cores = (cpu() - cpu0) / seconds;
      return { rate: total / seconds, seconds, cores };
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`group ${group} did not consume ${topic} in time`);
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

export interface FreshnessRun {
  stop(): Promise<{
    rate: number;
    probes: number;
    unseen: number;
    p50: number;
    p99: number;
    max: number;
  }>;
}

/** A probed device: when its probed report was due, and what its record shows once visible. */
interface Probe {
  readonly intended: number;
  /** The live measurements of the latest report sent for the device since the probed one. */
  expected: Record<string, unknown>;
  expectedAt: number;
}

/**
 * Produces device.state at `rate`/s as the throughput case does (gateways: a random installation
 * reports every device it has, at once, with one observedAt = the report's scheduled send time),
 * so that "50 % of max" is half of the maximum of the same traffic. Watches the served record of
 * every `probeEvery`-th event's device (under `prefix`: the project's or the reference's) until
 * it shows the report's live measurements. A later report of the same device replaces the
 * values awaited (the record shows the latest), so a probe counts until the latest report sent
 * is visible: an upper bound. Freshness = seen - observedAt.
 */
export function startFreshness(
  ctx: BenchContext,
  w: Workload,
  prefix: string,
  topic: string,
  rate: number,
  probeEvery = 10,
): FreshnessRun {
  const keys = createKeys(prefix);
  const rng = createRng(ctx.opts.seed + 7);
  /** `<devices key> <device field>` -> its probe. */
  const pending = new Map<string, Probe>();
  const latencies = new Samples();
  let produced = 0;
  let probes = 0;
  let stopping = false;
  const start = Date.now();
  const sends: Promise<unknown>[] = [];

  const watch = (key: string, intended: number, state: Record<string, unknown>) => {
    const probe = pending.get(key);
    if (probe === undefined) {
      if (produced % probeEvery !== 0) return;
      pending.set(key, { intended, expected: state, expectedAt: intended });
      probes++;
    } else if (intended > probe.expectedAt) {
      probe.expected = state;
      probe.expectedAt = intended;
    } else {
      // Two reports of one device due in the same millisecond: which one the record keeps is
      // the consumer's choice, so this probe cannot tell; it is left out.
      pending.delete(key);
      probes--;
    }
  };

  const produceTick = () => {
    if (stopping) return;
    const due = Math.floor(((Date.now() - start) * rate) / 1000);
    const messages: Message[] = [];
    while (produced < due) {
      const intended = start + Math.floor((produced * 1000) / rate);
      const inst = rng.int(1, w.installationCount);
      for (const device of w.devicesOf(inst)) {
        const state = liveState(rng, device.category);
        const event = stateEvent(inst, device, intended, state);
        messages.push({ key: String(inst), value: JSON.stringify(event) });
        watch(
          `${keys.devices(inst)} ${deviceField(device.category, device.deviceId)}`,
          intended,
          state,
        );
        produced++;
      }
    }
    if (messages.length > 0) sends.push(ctx.kafka.producer.send({ topic, acks: 1, messages }));
    setTimeout(produceTick, 10);
  };

  let polling = true;
  const poll = async () => {
    while (polling) {
      // The oldest probes only: they become visible first, and the poll stays cheap however
      // far the consumer falls behind.
      const entries: Array<[string, Probe]> = [];
      for (const entry of pending) {
        entries.push(entry);
        if (entries.length === POLL_BATCH) break;
      }
      if (entries.length > 0) {
        const pipeline = ctx.redis.pipeline();
        for (const [probe] of entries) {
          const [key, field] = probe.split(' ') as [string, string];
          pipeline.hget(key, field);
        }
        const replies = (await pipeline.exec()) ?? [];
        const now = Date.now();
        entries.forEach(([key, probe], i) => {
          const stored = replies[i]?.[1] as string | null | undefined;
          if (stored && shows(JSON.parse(stored) as Record<string, unknown>, probe.expected)) {
            latencies.push(now - probe.intended);
            pending.delete(key);
          }
        });
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  };
  produceTick();
  const poller = poll();

  return {
    async stop() {
      stopping = true;
      const elapsed = (Date.now() - start) / 1000;
      await Promise.all(sends);
      const deadline = Date.now() + 10_000;
      while (pending.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      polling = false;
      await poller;
      const s = summarizeLatencies(latencies.values());
      return {
        rate: produced / elapsed,
        probes,
        unseen: pending.size,
        p50: s.p50,
        p99: s.p99,
        max: s.max,
      };
    },
  };
}

/** Whether a served record carries every live measurement of a report (arrays by value). */
const shows = (record: Record<string, unknown>, state: Record<string, unknown>): boolean =>
  Object.entries(state).every(([name, value]) =>
    Array.isArray(value)
      ? JSON.stringify(record[name]) === JSON.stringify(value)
      : record[name] === value,
  );

/** A consumer process started on a topic, and the group whose commits tell it consumes. */
export type ConsumerStart = (topic: string) => Promise<{ child: Child; group: string }>;

/**
 * Starts a consumer process (the project's, unless `start` says otherwise) on a fresh live
 * topic and waits until it is consuming.
 */
export async function startLiveConsumer(
  ctx: BenchContext,
  setup: IngestSetup,
  name: string,
  start: ConsumerStart = (topic) => startTelemetryConsumer(ctx, setup, name, topic),
): Promise<{ topic: string; child: Child }> {
  const topic = await createTelemetryTopic(ctx, name);
  const consumer = await start(topic);
  // Warm: the group is joined and fetching once a first batch is committed.
  const rng = createRng(1);
  await produceAll(ctx.kafka.producer, topic, liveMessages(setup.workload, 60, Date.now(), rng));
  const deadline = Date.now() + 60_000;
  while ((await ctx.kafka.committed(consumer.group, topic)) < 60) {
    if (Date.now() > deadline) throw new Error('live consumer did not start consuming');
    await new Promise((r) => setTimeout(r, 50));
  }
  return { topic, child: consumer.child };
}

export type FreshnessResult = Awaited<ReturnType<FreshnessRun['stop']>>;

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
