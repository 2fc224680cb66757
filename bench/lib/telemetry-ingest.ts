import { topicSpecs } from '../../consumers/kafka/topics.js';
import { groupIdOf } from '../../src/consumer-groups.js';
import { createRng, type Rng } from '../../tools/sim/random.js';
import { liveState, stateEvent } from '../workload/device-state.js';
import type { Workload } from '../workload/plan.js';
import { type BenchContext, type ConsumerTopics, startConsumerProcess } from './context.js';
import { cpuSecondsOf } from './cpu.js';
import type { Child } from './processes.js';
import { type Message, produceAll } from './stack.js';

// The telemetry side of the ingest cases: a fresh telemetry topic, the consumer process on it,
// gateway-shaped live reports, and the group commits that tell how fast it consumed them.

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
