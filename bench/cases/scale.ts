import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type BenchContext, runLoad, type Server, startApi } from '../lib/context.js';
import { printRow, type Row } from '../lib/report.js';
import { dropPrefix, usedMemory, waitForQuietRedis } from '../lib/stack.js';
import { spread } from '../lib/stats.js';
import type { Endpoint } from '../load/load-spec.js';
import { writeReadModel } from '../workload/direct-write.js';
import { createWorkload } from '../workload/plan.js';

// Read throughput against read models of 1k, 100k and 1M devices, written straight into Redis
// (not through Kafka, to bound setup time), and Redis memory per device of each.

const ENDPOINT: Endpoint = 'getInstallationCurrentEnergyFlow';
const AVERAGE_DEVICES = 10.5; // 1-20 per installation, uniform

interface Dataset {
  readonly devices: number;
  readonly prefix: string;
  readonly api: Server;
  readonly pairsFile: string;
}

export async function scaleCases(ctx: BenchContext): Promise<void> {
  const datasets: Dataset[] = [];
  for (const target of ctx.opts.scaleDevices) {
    const prefix = `bench:${ctx.runId}:s${target}:`;
    ctx.cleanups.push(async () => {
      await dropPrefix(ctx.redis, prefix);
    });
    const w = createWorkload(ctx.opts.seed, Math.max(1, Math.round(target / AVERAGE_DEVICES)));
    await waitForQuietRedis(ctx.redis);
    const before = await usedMemory(ctx.redis);
    const t0 = performance.now();
    await writeReadModel(ctx.redis, prefix, w, Date.now());
    const buildS = (performance.now() - t0) / 1000;
    const after = await usedMemory(ctx.redis);
    const row: Row = {
      section: 'memory (read model written directly)',
      name: `${w.deviceCount.toLocaleString('en-US')} devices / ${w.installationCount.toLocaleString('en-US')} installations: used_memory delta per device`,
      unit: 'bytes',
      candidate: (after - before) / w.deviceCount,
      target: '<= 1,536 bytes',
      note: `delta ${((after - before) / 1048576).toFixed(1)} MiB incl. installations, flows, acl, keyViews; built in ${buildS.toFixed(1)} s`,
    };
    ctx.rows.push(row);
    printRow(row);
    const pairsFile = join(ctx.dir, `pairs-s${target}.json`);
    writeFileSync(pairsFile, JSON.stringify(w.pairs));
    const api = await startApi(ctx, `api-s${target}`, prefix);
    datasets.push({ devices: w.deviceCount, prefix, api, pairsFile });
  }
  await waitForQuietRedis(ctx.redis);
  for (const d of datasets) {
    await runLoad(
      ctx,
      'closed',
      { origin: d.api.origin, endpoint: ENDPOINT, pairsFile: d.pairsFile, durationS: 2 },
      {},
    );
  }
  const results = new Map<number, { rps: number[]; p99: number[] }>();
  for (let i = 0; i < ctx.opts.alternations; i++) {
    for (const d of datasets) {
      const m = await runLoad(
        ctx,
        'closed',
        {
          origin: d.api.origin,
          endpoint: ENDPOINT,
          pairsFile: d.pairsFile,
          durationS: ctx.opts.caseSeconds,
        },
        { api: d.api.child.pid },
      );
      if (m.result.non2xx > 0) ctx.notes.push(`scale ${d.devices}: ${m.result.non2xx} non-2xx`);
      const r = results.get(d.devices) ?? { rps: [], p99: [] };
      r.rps.push(m.result.rps);
      r.p99.push(m.result.p99);
      results.set(d.devices, r);
    }
  }
  const smallest = datasets[0] as Dataset;
  const reference = spread(results.get(smallest.devices)?.rps ?? []);
  for (const d of datasets) {
    const r = results.get(d.devices) ?? { rps: [], p99: [] };
    const rps = spread(r.rps);
    const row: Row = {
      section: 'scale',
      name: `${ENDPOINT} req/s at ${d.devices.toLocaleString('en-US')} devices (ratio to ${smallest.devices.toLocaleString('en-US')})`,
      unit: 'req/s',
      candidate: rps,
      baseline: reference,
      ratio: rps.median / reference.median,
      target: d === smallest ? undefined : '>= 0.9x',
      note: `p99 ${spread(r.p99).median.toFixed(2)} ms`,
    };
    ctx.rows.push(row);
    printRow(row);
  }
  for (const d of datasets) await d.api.child.stop();
  for (const d of datasets) await dropPrefix(ctx.redis, d.prefix);
}
