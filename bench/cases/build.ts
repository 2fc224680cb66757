import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Pool } from 'undici';
import { topicSpecs } from '../../consumers/kafka/topics.js';
import { accessFactKeys } from '../../src/read-model/access-facts.js';
import { createKeys } from '../../src/read-model/keys.js';
import {
  type BenchContext,
  type ConsumerTopics,
  type Server,
  startConsumerProcess,
} from '../lib/context.js';
import { printRow, type Row } from '../lib/report.js';
import { BASE_PATH, produceAll, usedMemory, waitForQuietRedis } from '../lib/stack.js';
import { accessMessages, firstReports, installationMessages } from '../workload/kafka-build.js';
import type { Workload } from '../workload/plan.js';

// Builds the main workload the way production would: events on the bench's own topics,
// projected by the project's consumer process into the bench's own key prefix.

export async function buildThroughKafka(
  ctx: BenchContext,
  w: Workload,
  prefix: string,
): Promise<void> {
  const topics: ConsumerTopics = {
    installations: `bench-${ctx.runId}-installations`,
    telemetry: `bench-${ctx.runId}-telemetry`,
    access: `bench-${ctx.runId}-access`,
    deadletter: `bench-${ctx.runId}-deadletter`,
  };
  for (const spec of topicSpecs(topics))
    await ctx.kafka.createTopic(spec.topic, spec.numPartitions);
  ctx.cleanups.push(() => ctx.kafka.deleteTopics(Object.values(topics)));
  await waitForQuietRedis(ctx.redis);
  const memoryBefore = await usedMemory(ctx.redis);
  const group = `bench-${ctx.runId}-build`;
  const consumer = await startConsumerProcess(ctx, 'consumers-build', prefix, topics, group);
  const now = Date.now();
  const installations = installationMessages(w, now);
  const access = accessMessages(w, now);
  const reports = firstReports(w, now);
  const t0 = performance.now();
  await produceAll(ctx.kafka.producer, topics.installations, installations);
  await produceAll(ctx.kafka.producer, topics.access, access);
  await produceAll(ctx.kafka.producer, topics.telemetry, reports, 500);
  const produced = performance.now();
  for (const [role, topic, total] of [
    ['installations', topics.installations, installations.length],
    ['access', topics.access, access.length],
    ['telemetry', topics.telemetry, reports.length],
  ] as const) {
    const deadline = Date.now() + 900_000;
    while ((await ctx.kafka.committed(`${group}.${role}`, topic)) < total) {
      if (Date.now() > deadline) throw new Error(`build: ${role} not projected in time`);
      if (consumer.child.process.exitCode !== null) throw new Error('build consumer exited');
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  // The access worker derives each (application, installation) pair after its batch committed
  // (docs/access.md): built means no partition of the access topic has work recorded.
  const facts = accessFactKeys(createKeys(prefix));
  const accessSpec = topicSpecs(topics).find((spec) => spec.topic === topics.access);
  const workSets = Array.from({ length: accessSpec?.numPartitions ?? 0 }, (_, p) =>
    facts.work(topics.access, p),
  );
  const deadline = Date.now() + 900_000;
  while ((await Promise.all(workSets.map((key) => ctx.redis.scard(key)))).some((n) => n > 0)) {
    if (Date.now() > deadline) throw new Error('build: access pairs not derived in time');
    if (consumer.child.process.exitCode !== null) throw new Error('build consumer exited');
    await new Promise((r) => setTimeout(r, 200));
  }
  const seconds = (performance.now() - t0) / 1000;
  await consumer.child.stop();
  await waitForQuietRedis(ctx.redis);
  const memoryAfter = await usedMemory(ctx.redis);
  const rows: Row[] = [
    {
      section: 'build (through Kafka and the consumer process)',
      name: `${w.installationCount} installations, ${w.deviceCount} devices, ${w.apps.length} apps, ${w.pairs.length} grants`,
      unit: 's',
      candidate: seconds,
      note: `${installations.length + access.length + reports.length} events (${reports.length} full first reports); produced in ${((produced - t0) / 1000).toFixed(1)} s`,
    },
    {
      section: 'memory (built through the consumers)',
      name: 'used_memory delta per device',
      unit: 'bytes',
      candidate: (memoryAfter - memoryBefore) / w.deviceCount,
      target: '<= 1,536 bytes',
      note: `delta ${((memoryAfter - memoryBefore) / 1048576).toFixed(1)} MiB incl. the consumers' own bookkeeping (device index, access facts)`,
    },
  ];
  for (const row of rows) {
    ctx.rows.push(row);
    printRow(row);
  }
}

/**
 * Fetches every body the API serves for the workload (checking each answers 200), for the
 * baseline server to replay at the same sizes. Writes the bodies and the request pairs.
 */
export async function captureBodies(
  ctx: BenchContext,
  api: Server,
  w: Workload,
): Promise<{ bodiesFile: string; pairsFile: string; averageBytes: Record<string, number> }> {
  const pool = new Pool(api.origin, { connections: 16 });
  const readerOf = new Map<number, string>();
  for (const [key, id] of w.pairs) if (!readerOf.has(id)) readerOf.set(id, key);
  const get = async (path: string, key: string) => {
    const res = await pool.request({ method: 'GET', path, headers: { 'api-key': key } });
    const body = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`${path} answered ${res.statusCode}: ${body}`);
    return body;
  };
  const bodies: Record<string, Array<[string, string]>> = {
    getInstallationDevices: [],
    getInstallationCurrentEnergyFlow: [],
    getInstallations: [],
  };
  const jobs: Array<() => Promise<void>> = [];
  for (const [id, key] of readerOf) {
    for (const endpoint of ['getInstallationDevices', 'getInstallationCurrentEnergyFlow']) {
      jobs.push(async () => {
        bodies[endpoint]?.push([
          String(id),
          await get(`${BASE_PATH}/${endpoint}?installationId=${id}`, key),
        ]);
      });
    }
  }
  for (const app of w.apps) {
    jobs.push(async () => {
      bodies.getInstallations?.push([
        app.key.apiKey,
        await get(`${BASE_PATH}/getInstallations`, app.key.apiKey),
      ]);
    });
  }
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < jobs.length) await (jobs[next++] as () => Promise<void>)();
    }),
  );
  await pool.close();
  const expected =
    (bodies.getInstallations ?? []).find(([k]) => k === w.apps[0]?.key.apiKey)?.[1] ?? '';
  const listed = (expected.match(/"timezone"/g) ?? []).length;
  if (listed !== w.apps[0]?.installations.length) {
    throw new Error(
      `getInstallations lists ${listed} installations, expected ${w.apps[0]?.installations.length}`,
    );
  }
  const averageBytes = Object.fromEntries(
    Object.entries(bodies).map(([name, list]) => [
      name,
      list.reduce((sum, [, b]) => sum + Buffer.byteLength(b), 0) / Math.max(1, list.length),
    ]),
  );
  const bodiesFile = join(ctx.dir, 'bodies.json');
  writeFileSync(bodiesFile, JSON.stringify(bodies));
  const pairsFile = join(ctx.dir, 'pairs.json');
  writeFileSync(pairsFile, JSON.stringify(w.pairs));
  return { bodiesFile, pairsFile, averageBytes };
}
