import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { groupIdOf } from '../../src/consumer-groups.js';
import { createRng } from '../../tools/sim/random.js';
import { type BenchContext, runLoad, startApi, startConsumerProcess } from '../lib/context.js';
import { produceAll } from '../lib/stack.js';
import { type IngestSetup, liveMessages } from '../lib/telemetry-ingest.js';
import { profileMarkdown, summarizeProfile } from '../profile/summarize-profile.js';
import { ENDPOINTS } from './reads.js';

// Where the time goes: the API process under closed-loop load with --cpu-prof (each endpoint in
// turn), Redis commands per request from INFO commandstats, and the consumer process under an
// ingest run with --cpu-prof.

async function commandStats(ctx: BenchContext): Promise<Map<string, number>> {
  const info = await ctx.redis.info('commandstats');
  const out = new Map<string, number>();
  for (const m of info.matchAll(/cmdstat_([^:]+):calls=(\d+)/g))
    out.set(m[1] as string, Number(m[2]));
  return out;
}

export async function profileApi(
  ctx: BenchContext,
  prefix: string,
  pairsFile: string,
): Promise<string> {
  const sections: string[] = [];
  for (const endpoint of ENDPOINTS) {
    const dir = join(ctx.dir, `prof-api-${endpoint}`);
    mkdirSync(dir, { recursive: true });
    const api = await startApi(ctx, `api-prof-${endpoint}`, prefix, [
      '--cpu-prof',
      `--cpu-prof-dir=${dir}`,
    ]);
    await runLoad(ctx, 'closed', { origin: api.origin, endpoint, pairsFile, durationS: 2 }, {});
    const before = await commandStats(ctx);
    const m = await runLoad(
      ctx,
      'closed',
      { origin: api.origin, endpoint, pairsFile, durationS: ctx.opts.caseSeconds },
      {},
    );
    const after = await commandStats(ctx);
    await api.child.stop();
    const perRequest = [...after]
      .map(([cmd, calls]) => [cmd, (calls - (before.get(cmd) ?? 0)) / m.result.requests] as const)
      .filter(([, n]) => n >= 0.01)
      .map(([cmd, n]) => `${cmd} ${n.toFixed(2)}`)
      .join(', ');
    const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
    if (!file) throw new Error(`no CPU profile written in ${dir}`);
    sections.push(
      `${profileMarkdown(`API, ${endpoint}, ${m.result.rps.toFixed(0)} req/s under profiler`, summarizeProfile(join(dir, file)))}\n\nRedis commands per request (INFO commandstats delta; other clients of the shared server included): ${perRequest}`,
    );
  }
  return sections.join('\n\n');
}

export async function profileConsumer(ctx: BenchContext, setup: IngestSetup): Promise<string> {
  const topic = `bench-${ctx.runId}-prof`;
  await ctx.kafka.createTopic(topic, 6);
  ctx.cleanups.push(() => ctx.kafka.deleteTopics([topic]));
  const rng = createRng(5);
  const w = setup.workload;
  const total = ctx.opts.ingestEvents;
  // The traffic of the throughput case: gateways reporting every device of an installation.
  const messages = liveMessages(w, total, Date.now(), rng);
  await produceAll(ctx.kafka.producer, topic, messages);
  const dir = join(ctx.dir, 'prof-consumers');
  mkdirSync(dir, { recursive: true });
  const group = `bench-${ctx.runId}-prof`;
  const before = await commandStats(ctx);
  const consumer = await startConsumerProcessProfiled(ctx, setup, topic, group, dir);
  const t0 = performance.now();
  while (
    (await ctx.kafka.committed(groupIdOf({ consumer: { groupId: group } }, 'telemetry'), topic)) <
    total
  ) {
    await new Promise((r) => setTimeout(r, 50));
  }
  const seconds = (performance.now() - t0) / 1000;
  const after = await commandStats(ctx);
  await consumer.stop();
  const perEvent = [...after]
    .map(([cmd, calls]) => [cmd, (calls - (before.get(cmd) ?? 0)) / total] as const)
    .filter(([, n]) => n >= 0.01)
    .map(([cmd, n]) => `${cmd} ${n.toFixed(2)}`)
    .join(', ');
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no CPU profile written in ${dir}`);
  return `${profileMarkdown(`consumer process, ${total} live device.state events in ~${seconds.toFixed(1)} s (incl. group join) under profiler`, summarizeProfile(join(dir, file)))}\n\nRedis commands per event: ${perEvent}`;
}

async function startConsumerProcessProfiled(
  ctx: BenchContext,
  setup: IngestSetup,
  topic: string,
  group: string,
  dir: string,
) {
  const c = await startConsumerProcess(
    ctx,
    'consumers-prof',
    setup.prefix,
    { ...setup.quietTopics, telemetry: topic },
    group,
    ['--cpu-prof', `--cpu-prof-dir=${dir}`],
  );
  return c.child;
}
