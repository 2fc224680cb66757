import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { createKeys } from '../../src/read-model/keys.js';
import { type BenchContext, track } from '../lib/context.js';
import { type Child, ROOT, startChild } from '../lib/processes.js';
import { KAFKA_BROKERS, REDIS_URL } from '../lib/stack.js';
import { BENCH_ONLINE_WINDOW_SECONDS } from '../workload/direct-write.js';
import type { Workload } from '../workload/plan.js';
import { referenceDir } from './ingest-reference.js';

// The lean reference projector of ../shared/ingest-ref (the variant issue 26's targets name:
// claims, loads, announces) as a process of this bench, on the bench's own stack, so freshness
// can be measured for it the same way as for the project's consumer. It runs from a copy in the
// run's scratch directory, on this checkout's kafkajs and ioredis (the versions it pins), with
// the field table dumped from this checkout's sources, as compare.sh does.

const FILES = ['lean-consumer.mjs', 'lean-fold.mjs', 'dump-fields.mjs'];

/** The reference's copy, prepared once per run. */
function prepared(ctx: BenchContext): string {
  const source = referenceDir();
  if (source === null) throw new Error('../shared/ingest-ref is not present (INGEST_REF_DIR)');
  const copy = join(ctx.dir, 'ingest-ref-lean');
  if (existsSync(join(copy, 'fields.json'))) return copy;
  mkdirSync(copy, { recursive: true });
  for (const file of FILES) copyFileSync(join(source, file), join(copy, file));
  symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  execFileSync(
    process.execPath,
    ['--import', 'tsx', join(copy, 'dump-fields.mjs'), ROOT, join(copy, 'fields.json')],
    { cwd: ROOT, stdio: 'ignore' },
  );
  return copy;
}

/**
 * Copies the workload's device records from `prefix` to the reference's, so that the reference
 * loads (LEAN_LOAD) the same installations the project's consumer loads.
 */
async function seed(ctx: BenchContext, prefix: string, to: string, w: Workload): Promise<void> {
  const project = createKeys(prefix);
  const reference = createKeys(to);
  for (let from = 1; from <= w.installationCount; from += 500) {
    const ids = Array.from(
      { length: Math.min(500, w.installationCount - from + 1) },
      (_, i) => from + i,
    );
    const read = ctx.redis.pipeline();
    for (const id of ids) read.hgetall(project.devices(id));
    const replies = (await read.exec()) ?? [];
    const write = ctx.redis.pipeline();
    ids.forEach((id, i) => {
      const records = replies[i]?.[1] as Record<string, string> | undefined;
      if (records && Object.keys(records).length > 0) write.hset(reference.devices(id), records);
    });
    await write.exec();
  }
}

/**
 * Starts the reference on `topic` in group `bench-<run>-<name>`, its records under `to` (the
 * project's key layout; a prefix of its own, as the revisions it keeps are offsets of `topic`)
 * seeded from the project's under `prefix`.
 */
export async function startReferenceConsumer(
  ctx: BenchContext,
  w: Workload,
  prefix: string,
  to: string,
  name: string,
  topic: string,
): Promise<{ child: Child; group: string }> {
  const copy = prepared(ctx);
  await seed(ctx, prefix, to, w);
  const group = `bench-${ctx.runId}-${name}`;
  const child = track(
    ctx,
    startChild({
      name,
      script: join(copy, 'lean-consumer.mjs'),
      env: {
        KAFKA_BROKERS,
        REDIS_URL,
        TOPIC: topic,
        GROUP: group,
        PREFIX: to,
        LEAN_WRITE: 'lua',
        LEAN_LOAD: '1',
        LEAN_INDEX: '1',
        LEAN_PUBLISH: '1',
        ONLINE_WINDOW_SECONDS: String(BENCH_ONLINE_WINDOW_SECONDS),
        FIELDS_FILE: join(copy, 'fields.json'),
      },
      logDir: ctx.dir,
    }),
  );
  return { child, group };
}
