import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { buildThroughKafka, captureBodies } from './cases/build.js';
import { freshness, ingestThroughput } from './cases/ingest.js';
import { ingestCodecs } from './cases/ingest-codec.js';
import { ingestFloor } from './cases/ingest-floor.js';
import { ingestReference } from './cases/ingest-reference.js';
import { ingestScaleOut } from './cases/ingest-scale-out.js';
import { microCases } from './cases/micro.js';
import { freshnessUnderReads, mixedCase } from './cases/mixed.js';
import { profileApi, profileConsumer } from './cases/profile.js';
import { closedLoopReads, openLoopReads, type ReadServers, warmUp } from './cases/reads.js';
import { rebuildCase } from './cases/rebuild.js';
import { redisPatternCases } from './cases/redis-patterns.js';
import { scaleCases } from './cases/scale.js';
import { startupCases } from './cases/startup.js';
import { variantCases } from './cases/variants.js';
import {
  type BenchContext,
  startApi,
  startBaselineServer,
  startOneReadServer,
} from './lib/context.js';
import { parseOptions } from './lib/options.js';
import { ROOT } from './lib/processes.js';
import { markdownTable } from './lib/report.js';
import {
  benchKafka,
  benchRedis,
  dropPrefix,
  ensureStack,
  kafkaPid,
  redisPid,
  redisVersion,
} from './lib/stack.js';
import { recordTargets } from './lib/targets-record.js';
import type { IngestSetup } from './lib/telemetry-ingest.js';
import type { Endpoint } from './load/load-spec.js';
import { createWorkload } from './workload/plan.js';

// The one benchmark command: `npx tsx bench/run.ts [--quick]` (see bench/README.md).

const opts = parseOptions(process.argv.slice(2));
const runId = `${Date.now().toString(36)}`;
const started = new Date();
const loadAtStart = loadavg();
ensureStack();
const redis = benchRedis();
const kafka = await benchKafka(`bench-${runId}`);
const ctx: BenchContext = {
  opts,
  runId,
  dir: mkdtempSync(join(tmpdir(), `bench-${runId}-`)),
  redis,
  kafka,
  redisPid: await redisPid(redis),
  kafkaPid: kafkaPid(),
  rows: [],
  children: new Set(),
  cleanups: [],
  notes: [],
};
const pkg = (name: string) =>
  (
    JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;
const machine = [
  `${cpus().length} x ${cpus()[0]?.model ?? '?'}, ${(totalmem() / 2 ** 30).toFixed(0)} GiB RAM`,
  `load average at start ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
  `node ${process.version}, redis ${await redisVersion(redis)}, kafkajs ${pkg('kafkajs')}, fastify ${pkg('fastify')}, ioredis ${pkg('ioredis')}, autocannon ${pkg('autocannon')}, undici ${pkg('undici')}`,
  `options ${JSON.stringify({ ...opts, skip: [...opts.skip] })}`,
  `logs and scratch files: ${ctx.dir}`,
];
console.log(`bench ${runId} ${opts.quick ? '(quick)' : ''}\n  ${machine.join('\n  ')}`);

let shuttingDown = false;
async function cleanUp(): Promise<void> {
  if (shuttingDown) return;
  shuttingDown = true;
  for (const child of [...ctx.children]) await child.stop(5_000).catch(() => undefined);
  for (const cleanup of ctx.cleanups.reverse())
    await cleanup().catch((e) => console.error(`cleanup: ${e}`));
  await dropPrefix(redis, `bench:${runId}:`).catch(() => undefined);
}
process.on('SIGINT', () => void cleanUp().then(() => process.exit(130)));

const prefix = `bench:${runId}:main:`;
let profiles = '';
try {
  const workload = createWorkload(opts.seed, opts.installations);
  console.log(
    `\n[build] ${workload.installationCount} installations, ${workload.deviceCount} devices, ${workload.pairs.length} (key, installation) pairs`,
  );
  await buildThroughKafka(ctx, workload, prefix);

  const api = await startApi(ctx, 'api', prefix);
  const captured = await captureBodies(ctx, api, workload);
  console.log(
    `  average body bytes: ${JSON.stringify(captured.averageBytes, (_k, v) => (typeof v === 'number' ? Math.round(v) : v))}`,
  );
  const baseline = await startBaselineServer(ctx, captured.bodiesFile);
  const references = [
    {
      server: await startOneReadServer(ctx, 'one-read-server', prefix, workload.apps),
      name: 'the one-read server (R)',
      target: '>= 0.8x (issue 38)',
    },
    {
      server: await startOneReadServer(ctx, 'contract-server', prefix, workload.apps, 'contract'),
      name: "one read with the contract's work (RC)",
    },
  ];
  const servers: ReadServers = { api, baseline, references, pairsFile: captured.pairsFile };

  const run = (phase: string) => !opts.skip.has(phase);
  let maxima = new Map<Endpoint, number>();
  if (run('reads')) {
    console.log('\n[reads] warm-up, then closed loop (B C alternating)');
    await warmUp(ctx, servers);
    maxima = await closedLoopReads(ctx, servers);
  }
  if (run('open') && maxima.size > 0) {
    console.log('\n[reads] open loop at 50% and 80% of the candidate maximum');
    await openLoopReads(ctx, servers, maxima);
  }

  const quietTopics = {
    installations: `bench-${runId}-quiet-installations`,
    access: `bench-${runId}-quiet-access`,
    deadletter: `bench-${runId}-quiet-deadletter`,
  };
  ctx.cleanups.push(() => kafka.deleteTopics(Object.values(quietTopics)));
  const setup: IngestSetup = { workload, prefix, quietTopics };
  if (run('ingest')) {
    console.log('\n[ingest] bare consumer vs consumer process (alternating)');
    const maxIngest = await ingestThroughput(ctx, setup);
    console.log('\n[freshness] at 50% of max ingest');
    await freshness(ctx, setup, maxIngest);
    if (run('mixed')) {
      console.log('\n[mixed] reads while ingesting at 50% of max');
      await mixedCase(ctx, setup, servers, maxIngest);
      if (maxima.size > 0) {
        console.log('\n[mixed] freshness while the flow read runs at 50% of its max');
        await freshnessUnderReads(ctx, setup, servers, maxima, maxIngest);
      }
    }
  }
  if (run('reference')) {
    console.log('\n[ingest vs reference] the consumer process beside ../shared/ingest-ref');
    await ingestReference(ctx);
  }
  if (run('java')) {
    console.log('\n[ingest, Java producer] lz4 batches vs uncompressed (alternating)');
    await ingestCodecs(ctx, setup);
  }
  if (run('scale-out')) {
    console.log('\n[scale-out] 2 consumer processes in one group vs 1 (alternating)');
    await ingestScaleOut(ctx, setup);
  }
  if (run('rebuild')) {
    console.log(`\n[rebuild] ${opts.rebuildEvents} telemetry events into an empty read model`);
    await rebuildCase(ctx, workload);
  }
  await api.child.stop();
  await baseline.child.stop();

  if (run('startup')) {
    console.log('\n[startup] both processes compiled vs through tsx (alternating)');
    await startupCases(ctx, { workload, prefix, pairsFile: captured.pairsFile });
  }

  if (run('scale')) {
    console.log('\n[scale] read model written directly');
    await scaleCases(ctx);
  }

  if (run('micro')) {
    console.log('\n[micro] pure hot-path steps in process');
    microCases(ctx, workload);
  }
  if (run('floor')) {
    console.log('\n[floor] the pure ingest path against the least a consumer does, in process');
    await ingestFloor(ctx, workload);
  }

  if (opts.experiments) {
    console.log('\n[experiments] settings that back the recommendations');
    await variantCases(ctx, prefix, captured.pairsFile);
    await redisPatternCases(ctx, workload, prefix);
  }

  if (opts.profile) {
    console.log('\n[profile] API and consumer under --cpu-prof');
    profiles = `${await profileApi(ctx, prefix, captured.pairsFile)}\n\n${await profileConsumer(ctx, setup)}`;
  }
} finally {
  await cleanUp();
  await kafka.close().catch(() => undefined);
  redis.disconnect();
}

const finished = new Date();
const report = [
  `## Run ${runId}${opts.quick ? ' (quick)' : ''}: ${started.toISOString()} – ${finished.toISOString()}`,
  '',
  ...machine.map((m) => `- ${m}`),
  `- load average at end ${loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
  '',
  markdownTable(ctx.rows),
  '',
  ...(ctx.notes.length ? ['Notes:', ...ctx.notes.map((n) => `- ${n}`), ''] : []),
  profiles,
].join('\n');
const resultsDir = join(ROOT, 'bench', 'results');
mkdirSync(resultsDir, { recursive: true });
const name = opts.quick ? 'latest-quick' : 'latest';
writeFileSync(join(resultsDir, `${name}.md`), `${report}\n`);
writeFileSync(
  join(resultsDir, `${name}.json`),
  JSON.stringify({ runId, machine, rows: ctx.rows, notes: ctx.notes }, null, 2),
);
console.log(`\n${markdownTable(ctx.rows)}\n`);
if (ctx.notes.length) console.log(ctx.notes.join('\n'));
console.log(`recorded in bench/results/${name}.md`);
// Only a full run with every phase stands for the project: a quick or partial one would put
// smaller or missing figures in front of a newcomer.
if (!opts.quick && opts.skip.size === 0) {
  const load = (l: number[]) => (l[0] ?? 0).toFixed(2);
  recordTargets(ctx.rows, {
    runId,
    date: `${started.toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    load: `${load(loadAtStart)} -> ${load(loadavg())}`,
    node: process.versions.node,
  });
  console.log('the targets table heads bench/RESULTS.md; the chart is bench/targets.png');
}
process.exit(0);
