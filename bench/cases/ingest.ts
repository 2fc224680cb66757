import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { topicSpecs } from '../../consumers/kafka/topics.js';
import { decodeDeviceTimes } from '../../src/read-model/installation-state-codec.js';
import { createKeys, deviceField, deviceTimesKey } from '../../src/read-model/keys.js';
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

// Ingest cases: throughput of the project's consumer process against a bare kafkajs consumer on
// the same topic (alternating), the bare consumer on @platformatic/kafka against the kafkajs one,
// then produce-to-visible freshness at 50 % of the consumer process's maximum.

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
  return { child, group: `${group}.telemetry` };
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

/**
 * Produces device.state at `rate`/s as the throughput case does (gateways: a random installation
 * reports every device it has, at once, with one observedAt = the report's scheduled send time),
 * so that "50 % of max" is half of the maximum of the same traffic. Watches the device's precise
 * lastSeen (its flow-inputs value, `<first>;<last>;…`, written by the same script as the record)
 * of every `probeEvery`-th event until it reaches that time. Freshness = seen - observedAt.
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
  /** `<flow-inputs key> <device field>` -> observedAt awaited. */
  const pending = new Map<string, number>();
  const latencies = new Samples();
  let produced = 0;
  let probes = 0;
  let stopping = false;
  const start = Date.now();
  const sends: Promise<unknown>[] = [];

  const produceTick = () => {
    if (stopping) return;
    const due = Math.floor(((Date.now() - start) * rate) / 1000);
    const messages: Message[] = [];
    while (produced < due) {
      const intended = start + Math.floor((produced * 1000) / rate);
      const inst = rng.int(1, w.installationCount);
      for (const device of w.devicesOf(inst)) {
        const event = stateEvent(inst, device, intended, liveState(rng, device.category));
        messages.push({ key: String(inst), value: JSON.stringify(event) });
        if (produced % probeEvery === 0) {
          const key = `${deviceTimesKey(keys, inst)} ${deviceField(device.category, device.deviceId)}`;
          if (!pending.has(key)) {
            pending.set(key, intended);
            probes++;
          }
        }
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
      const entries: Array<[string, number]> = [];
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
        entries.forEach(([key, observed], i) => {
          const stored = (replies[i]?.[1] as string | null) ?? '';
          const last = decodeDeviceTimes(stored)?.lastSeenMs ?? 0;
          if (last >= observed) {
            latencies.push(now - observed);
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

/** Starts a consumer process on a fresh live topic and waits until it is consuming. */
export async function startLiveConsumer(
  ctx: BenchContext,
  setup: IngestSetup,
  name: string,
): Promise<{ topic: string; child: Child }> {
  const topic = await createTelemetryTopic(ctx, name);
  const consumer = await startTelemetryConsumer(ctx, setup, name, topic);
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

export async function freshness(
  ctx: BenchContext,
  setup: IngestSetup,
  maxIngest: number,
): Promise<void> {
  const live = await startLiveConsumer(ctx, setup, 'live');
  // 10 % as well: shows whether latency comes from load or from fixed costs per fetch cycle.
  for (const share of [0.1, 0.5]) {
    const rate = Math.max(10, Math.floor(maxIngest * share));
    const cpu0 = cpuSecondsOf(live.child.pid);
    const t0 = performance.now();
    const run = startFreshness(ctx, setup.workload, setup.prefix, live.topic, rate);
    await new Promise((r) => setTimeout(r, ctx.opts.freshnessSeconds * 1000));
    const f = await run.stop();
    const cores = (cpuSecondsOf(live.child.pid) - cpu0) / ((performance.now() - t0) / 1000);
    const note = `${f.rate.toFixed(0)} events/s produced; ${f.probes} probes, ${f.unseen} unseen; max ${f.max.toFixed(0)} ms; consumer ${cores.toFixed(2)} cores; 1 in 10 events probed, oldest ${POLL_BATCH} polled every ${POLL_MS} ms`;
    for (const [p, v] of [
      ['p50', f.p50],
      ['p99', f.p99],
    ] as const) {
      const row: Row = {
        section: `freshness @${share * 100}% of max ingest`,
        name: `produce-to-visible ${p}`,
        unit: 'ms',
        candidate: v,
        ...(p === 'p99' && share === 0.5 ? { target: '<= 100 ms' } : {}),
        note: p === 'p50' ? note : undefined,
      };
      ctx.rows.push(row);
      printRow(row);
    }
  }
  await live.child.stop();
}
