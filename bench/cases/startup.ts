import { execFileSync } from 'node:child_process';
import { topicSpecs } from '../../consumers/kafka/topics.js';
import { groupIdOf } from '../../src/consumer-groups.js';
import { createRng } from '../../tools/sim/random.js';
import { type BenchContext, commonEnv, runLoad, track } from '../lib/context.js';
import { type Child, freePort, httpOk, ROOT, rssMiB, startChild } from '../lib/processes.js';
import { printRow, type Row } from '../lib/report.js';
import { produceAll } from '../lib/stack.js';
import { spread } from '../lib/stats.js';
import { liveMessages } from '../lib/telemetry-ingest.js';
import type { Workload } from '../workload/plan.js';

// Startup time and memory of both processes, compiled (`npm run build`, `node dist/<file>.js`,
// as the Dockerfile runs them) against the sources through tsx (`node --import tsx <file>.ts`),
// taking turns in the same run. Startup: spawn to the first 200 of /readyz (the API: listening
// and Redis answering; the consumers: Redis answering and every topic consumer a member of its
// group and consuming). RSS (/proc/<pid>/status VmRSS): 1 s after ready, then after a short
// load (closed-loop reads for the API; a burst of live telemetry consumed to the end for the
// consumers). Each variant is started once, unmeasured, first: both then start from warm disk
// caches (and tsx from its transform cache), as a restart does.

// A third variant, compiled with --enable-source-maps, tells whether a difference under load
// comes from the source maps tsx turns on (V8 then maps every stack trace it formats).
type Variant = 'tsx' | 'compiled' | 'compiled-source-maps';
const VARIANTS: readonly Variant[] = ['tsx', 'compiled', 'compiled-source-maps'];
/** Starts `source` as the variant runs it: through tsx, or its compiled file in dist/. */
const startVariant = (
  ctx: BenchContext,
  name: string,
  variant: Variant,
  source: string,
  env: Record<string, string>,
): Child =>
  track(
    ctx,
    startChild({
      name,
      script: variant === 'tsx' ? source : `dist/${source.replace(/\.ts$/, '.js')}`,
      nodeArgs: variant === 'compiled-source-maps' ? ['--enable-source-maps'] : [],
      env,
      logDir: ctx.dir,
    }),
  );

const READY_POLL_MS = 5;
/** Events of the consumers' burst: the produce-to-committed span is its rate. */
const burstOf = (ctx: BenchContext) => Math.max(1_000, ctx.opts.ingestEvents);
const SETTLE_MS = 1_000;

export interface StartupSetup {
  readonly workload: Workload;
  readonly prefix: string;
  /** (key, installation) pairs of the workload, for the API's reads. */
  readonly pairsFile: string;
}

interface Sample {
  readonly readyMs: number;
  readonly rssStart: number;
  readonly rssLoaded: number;
  /** Reads per second (API) or events per second (consumers) of the load. */
  readonly rate: number;
}

/** Milliseconds from `t0` to the first 200 of `url`. */
async function readyAfter(child: Child, url: string, t0: number): Promise<number> {
  const deadline = t0 + 90_000;
  while (performance.now() < deadline) {
    if (child.process.exitCode !== null) throw new Error(`${child.name} exited before ready`);
    if (await httpOk(url).catch(() => false)) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, READY_POLL_MS));
  }
  throw new Error(`${child.name} not ready after 90 s`);
}

const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));

async function apiRun(
  ctx: BenchContext,
  setup: StartupSetup,
  variant: Variant,
  run: string,
  measured: boolean,
): Promise<Sample> {
  const port = await freePort();
  const env = { ...commonEnv(setup.prefix), API_HOST: '127.0.0.1', API_PORT: String(port) };
  const t0 = performance.now();
  const child = startVariant(ctx, `startup-api-${variant}-${run}`, variant, 'api/main.ts', env);
  const origin = `http://127.0.0.1:${port}`;
  try {
    const readyMs = await readyAfter(child, `${origin}/readyz`, t0);
    if (!measured) return { readyMs, rssStart: 0, rssLoaded: 0, rate: 0 };
    await settle();
    const rssStart = rssMiB(child.pid);
    const load = await runLoad(
      ctx,
      'closed',
      {
        origin,
        endpoint: 'getInstallationCurrentEnergyFlow',
        pairsFile: setup.pairsFile,
        durationS: ctx.opts.caseSeconds,
      },
      { api: child.pid },
    );
    if (load.result.non2xx > 0) ctx.notes.push(`startup ${variant}: ${load.result.non2xx} non-2xx`);
    return { readyMs, rssStart, rssLoaded: rssMiB(child.pid), rate: load.result.rps };
  } finally {
    await child.stop();
  }
}

async function consumerRun(
  ctx: BenchContext,
  setup: StartupSetup,
  variant: Variant,
  run: string,
  measured: boolean,
): Promise<Sample> {
  // Topics and group of its own: the process starts on empty topics, as after a deployment with
  // nothing pending, and its burst is the only input.
  const base = `bench-${ctx.runId}-startup-${variant}-${run}`;
  const topics = {
    installations: `${base}-installations`,
    telemetry: `${base}-telemetry`,
    access: `${base}-access`,
    deadletter: `${base}-deadletter`,
  };
  for (const spec of topicSpecs(topics))
    await ctx.kafka.createTopic(spec.topic, spec.numPartitions);
  ctx.cleanups.push(() => ctx.kafka.deleteTopics(Object.values(topics)));
  const port = await freePort();
  const env = {
    ...commonEnv(setup.prefix),
    TOPIC_INSTALLATIONS: topics.installations,
    TOPIC_TELEMETRY: topics.telemetry,
    TOPIC_ACCESS: topics.access,
    TOPIC_DEADLETTER: topics.deadletter,
    CONSUMER_GROUP: base,
    CONSUMER_HEALTH_PORT: String(port),
    KAFKA_CLIENT_ID: base,
  };
  const t0 = performance.now();
  const child = startVariant(
    ctx,
    `startup-consumers-${variant}-${run}`,
    variant,
    'consumers/main.ts',
    env,
  );
  try {
    const readyMs = await readyAfter(child, `http://127.0.0.1:${port}/readyz`, t0);
    if (!measured) return { readyMs, rssStart: 0, rssLoaded: 0, rate: 0 };
    await settle();
    const rssStart = rssMiB(child.pid);
    const total = burstOf(ctx);
    const produced = performance.now();
    await produceAll(
      ctx.kafka.producer,
      topics.telemetry,
      liveMessages(setup.workload, total, Date.now(), createRng(7)),
    );
    const deadline = Date.now() + 300_000;
    while (
      (await ctx.kafka.committed(
        groupIdOf({ consumer: { groupId: base } }, 'telemetry'),
        topics.telemetry,
      )) < total
    ) {
      if (child.process.exitCode !== null) throw new Error(`${child.name} exited during its load`);
      if (Date.now() > deadline) throw new Error(`${child.name} did not consume its burst`);
      await new Promise((r) => setTimeout(r, 25));
    }
    const rate = total / ((performance.now() - produced) / 1000);
    return { readyMs, rssStart, rssLoaded: rssMiB(child.pid), rate };
  } finally {
    await child.stop();
  }
}

export async function startupCases(ctx: BenchContext, setup: StartupSetup): Promise<void> {
  const t0 = performance.now();
  execFileSync(process.execPath, ['infra/build.mjs'], { cwd: ROOT, stdio: 'ignore' });
  const buildS = (performance.now() - t0) / 1000;
  const processes = [
    {
      label: 'API',
      run: apiRun,
      load: `${ctx.opts.caseSeconds} s closed-loop flow reads`,
      rateUnit: 'req/s',
    },
    {
      label: 'consumers',
      run: consumerRun,
      load: `a burst of ${burstOf(ctx).toLocaleString('en-US')} live telemetry events`,
      rateUnit: 'events/s',
    },
  ];
  for (const p of processes) {
    for (const variant of VARIANTS) await p.run(ctx, setup, variant, 'warm', false);
    const samples: Record<Variant, Sample[]> = {
      tsx: [],
      compiled: [],
      'compiled-source-maps': [],
    };
    for (let i = 0; i < ctx.opts.alternations; i++) {
      // Rotate which variant goes first, so none always follows another.
      const order = VARIANTS.map((_, j) => VARIANTS[(i + j) % VARIANTS.length] as Variant);
      for (const variant of order)
        samples[variant].push(await p.run(ctx, setup, variant, String(i), true));
    }
    const figure = (
      unit: string,
      name: string,
      pick: (s: Sample) => number,
      candidateVariant: Variant = 'compiled',
    ) => {
      const candidate = spread(samples[candidateVariant].map(pick));
      const baseline = spread(samples.tsx.map(pick));
      const row: Row = {
        section: 'startup (compiled vs tsx)',
        name: `${p.label}: ${name}`,
        unit,
        candidate,
        baseline,
        ratio: candidate.median / baseline.median,
      };
      ctx.rows.push(row);
      printRow(row);
    };
    figure('ms', 'spawn to /readyz 200', (s) => s.readyMs);
    figure('MiB', 'RSS 1 s after ready', (s) => s.rssStart);
    figure('MiB', `RSS after ${p.load}`, (s) => s.rssLoaded);
    figure(p.rateUnit, `rate during ${p.load}`, (s) => s.rate);
    figure(
      p.rateUnit,
      `rate during ${p.load}, compiled run with --enable-source-maps`,
      (s) => s.rate,
      'compiled-source-maps',
    );
  }
  ctx.notes.push(`startup: npm run build took ${buildS.toFixed(1)} s in this run`);
}
