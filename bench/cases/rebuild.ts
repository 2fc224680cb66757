import { createKafkajsClient } from '../../consumers/kafka/kafkajs-client.js';
import { topicSpecs } from '../../consumers/kafka/topics.js';
import { groupIdOf, TOPIC_ROLES } from '../../src/consumer-groups.js';
import { createLogger } from '../../src/logger.js';
import { rebuildReadModel } from '../../tools/rebuild/read-model-rebuild.js';
import { createRng } from '../../tools/sim/random.js';
import { type BenchContext, type ConsumerTopics, startConsumerProcess } from '../lib/context.js';
import { cpuSecondsOf } from '../lib/cpu.js';
import { printRow, type Row } from '../lib/report.js';
import { KAFKA_BROKERS, produceAll } from '../lib/stack.js';
import { liveMessages } from '../lib/telemetry-ingest.js';
import { accessMessages, firstReports, installationMessages } from '../workload/kafka-build.js';
import type { Workload } from '../workload/plan.js';

// Time to rebuild the read model from the topics (docs/reliability.md): the installations and
// access topics of the workload and `rebuildEvents` telemetry events (every device's first
// report, then gateway reports), replayed into an empty key prefix by the documented command
// (rebuildReadModel: prefix emptied, groups moved to the start, a new epoch marker) and one
// consumer process, timed from its start to the commit of every topic's end.

/** Live reports are produced in chunks, so the bench never holds all of them at once. */
const CHUNK = 100_000;

export async function rebuildCase(ctx: BenchContext, w: Workload): Promise<void> {
  const prefix = `bench:${ctx.runId}:rebuild:`;
  const topics: ConsumerTopics = {
    installations: `bench-${ctx.runId}-rb-installations`,
    telemetry: `bench-${ctx.runId}-rb-telemetry`,
    access: `bench-${ctx.runId}-rb-access`,
    deadletter: `bench-${ctx.runId}-rb-deadletter`,
  };
  for (const spec of topicSpecs(topics))
    await ctx.kafka.createTopic(spec.topic, spec.numPartitions);
  ctx.cleanups.push(() => ctx.kafka.deleteTopics(Object.values(topics)));

  const now = Date.now();
  const counts = {
    installations: installationMessages(w, now),
    access: accessMessages(w, now),
  };
  await produceAll(ctx.kafka.producer, topics.installations, counts.installations);
  await produceAll(ctx.kafka.producer, topics.access, counts.access);
  const reports = firstReports(w, now);
  await produceAll(ctx.kafka.producer, topics.telemetry, reports, 500);
  const rng = createRng(ctx.opts.seed + 11);
  let telemetry = reports.length;
  for (let chunk = 1; telemetry < ctx.opts.rebuildEvents; chunk++) {
    const n = Math.min(CHUNK, ctx.opts.rebuildEvents - telemetry);
    // Each chunk a second after the previous one: later reports are newer, as live ones are.
    await produceAll(
      ctx.kafka.producer,
      topics.telemetry,
      liveMessages(w, n, now + chunk * 1_000, rng),
    );
    telemetry += n;
  }
  const totals = {
    installations: counts.installations.length,
    access: counts.access.length,
    telemetry,
  };

  const group = `bench-${ctx.runId}-rebuild`;
  const groups = { consumer: { groupId: group } };
  const logger = createLogger({ level: 'warn', name: 'bench-rebuild' });
  const kafka = createKafkajsClient({
    brokers: KAFKA_BROKERS.split(','),
    clientId: `bench-${ctx.runId}-rebuild`,
    logger,
  });
  await rebuildReadModel({
    kafka,
    redis: ctx.redis,
    keyPrefix: prefix,
    groups: TOPIC_ROLES.map((role) => ({ topic: topics[role], groupId: groupIdOf(groups, role) })),
    clock: Date.now,
    logger,
  });

  const t0 = performance.now();
  const consumer = await startConsumerProcess(ctx, 'consumers-rebuild', prefix, topics, group);
  const cpu0 = cpuSecondsOf(consumer.child.pid);
  const ready = performance.now();
  const deadline = Date.now() + 1_800_000;
  for (const role of TOPIC_ROLES) {
    while ((await ctx.kafka.committed(groupIdOf(groups, role), topics[role])) < totals[role]) {
      if (Date.now() > deadline) throw new Error(`rebuild: ${role} not replayed in time`);
      if (consumer.child.process.exitCode !== null) throw new Error('rebuild consumer exited');
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  const done = performance.now();
  const cores = (cpuSecondsOf(consumer.child.pid) - cpu0) / ((done - ready) / 1000);
  await consumer.child.stop();

  const events = totals.installations + totals.access + totals.telemetry;
  const seconds = (done - t0) / 1000;
  const row: Row = {
    section: 'rebuild (docs/reliability.md: the documented command, then one consumer process)',
    name: `from ${events} events (${totals.telemetry} telemetry) into an empty read model`,
    unit: 's',
    candidate: seconds,
    note: `${Math.round(totals.telemetry / ((done - ready) / 1000))} telemetry events/s from ready; process start to ready ${((ready - t0) / 1000).toFixed(1)} s; consumer ${cores.toFixed(2)} cores; ${w.installationCount} installations, ${w.deviceCount} devices, ${totals.access} access events`,
  };
  ctx.rows.push(row);
  printRow(row);
}
