import { topicSpecs } from '../../consumers/kafka/topics.js';
import { groupIdOf } from '../../src/consumer-groups.js';
import { createRng } from '../../tools/sim/random.js';
import { type BenchContext, startConsumerProcess } from '../lib/context.js';
import { waitUntil } from '../lib/processes.js';
import { printRow, type Row } from '../lib/report.js';
import { produceAll } from '../lib/stack.js';
import { spread } from '../lib/stats.js';
import {
  type Consumption,
  type IngestSetup,
  liveMessages,
  measureConsumption,
} from '../lib/telemetry-ingest.js';

// Issue 14: ingest with two consumer processes in one group against one, alternating, each run
// on a fresh topic with the project's telemetry partition count. The processes join the empty
// topic first and the group settles; only then are the events produced, so neither side pays a
// rebalance inside its measured span (a scale-out pays one once; the fault suite's scenario (d)
// measures that). Timed from the first event produced to the commit that completes the topic.

const PARTITIONS =
  topicSpecs({ installations: 'i', telemetry: 't', access: 'a', deadletter: 'd' })[1]
    ?.numPartitions ?? 6;

async function groupSettled(ctx: BenchContext, groupId: string, members: number) {
  const { groups } = await ctx.kafka.admin.describeGroups([groupId]);
  const group = groups[0];
  return group?.state === 'Stable' && group.members.length === members;
}

async function runWith(
  ctx: BenchContext,
  setup: IngestSetup,
  processes: number,
  run: number,
): Promise<Consumption> {
  const topic = `bench-${ctx.runId}-scale-${processes}-${run}`;
  await ctx.kafka.createTopic(topic, PARTITIONS);
  ctx.cleanups.push(() => ctx.kafka.deleteTopics([topic]));
  const group = `bench-${ctx.runId}-scale-${processes}-${run}`;
  const telemetryGroup = groupIdOf({ consumer: { groupId: group } }, 'telemetry');
  const consumers = await Promise.all(
    Array.from({ length: processes }, (_, k) =>
      startConsumerProcess(
        ctx,
        `consumers-scale-${processes}-${run}-${k}`,
        setup.prefix,
        { ...setup.quietTopics, telemetry: topic },
        group,
      ),
    ),
  );
  const children = consumers.map((c) => c.child);
  try {
    await waitUntil(
      `${processes} consumer(s) settled in ${telemetryGroup}`,
      () => groupSettled(ctx, telemetryGroup, processes),
      60_000,
      undefined,
      100,
    );
    const total = ctx.opts.ingestEvents;
    const rng = createRng(ctx.opts.seed + 141 + run);
    const messages = liveMessages(setup.workload, total, Date.now(), rng);
    const start = performance.now();
    const measuring = measureConsumption(ctx, telemetryGroup, topic, total, children, start);
    await produceAll(ctx.kafka.producer, topic, messages);
    return await measuring;
  } finally {
    await Promise.all(children.map((c) => c.stop()));
  }
}

export async function ingestScaleOut(ctx: BenchContext, setup: IngestSetup): Promise<void> {
  const one: Consumption[] = [];
  const two: Consumption[] = [];
  for (let i = 0; i < ctx.opts.alternations; i++) {
    for (const n of i % 2 === 0 ? [1, 2] : [2, 1]) {
      const measured = await runWith(ctx, setup, n, i);
      (n === 1 ? one : two).push(measured);
    }
    console.log(
      `  scale-out run ${i + 1}: 1 process ${one.at(-1)?.rate.toFixed(0)} ev/s, 2 processes ${two.at(-1)?.rate.toFixed(0)} ev/s`,
    );
  }
  const c = spread(two.map((x) => x.rate));
  const b = spread(one.map((x) => x.rate));
  const cores = (runs: readonly Consumption[]) =>
    spread(runs.map((x) => x.cores)).median.toFixed(2);
  const row: Row = {
    section: 'ingest, scale-out',
    name: `device.state events/s, 2 consumer processes in one group vs 1 (${ctx.opts.ingestEvents} live updates per run, ${PARTITIONS} partitions)`,
    unit: 'events/s',
    candidate: c,
    baseline: b,
    ratio: c.median / b.median,
    target: 'report what 2 cores allow',
    note: `consumer processes together: ${cores(two)} cores (2) vs ${cores(one)} (1); the bench process produces during the span on the same 2 cores, as do Kafka and Redis`,
  };
  ctx.rows.push(row);
  printRow(row);
}
