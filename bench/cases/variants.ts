import { type BenchContext, runLoad, type Server, startApi } from '../lib/context.js';
import { printRow, type Row } from '../lib/report.js';
import { spread } from '../lib/stats.js';
import type { Endpoint } from '../load/load-spec.js';

// Experiments that back the recommendations: the same API under another setting, alternating
// with the API as shipped (LOG_LEVEL=warn) on the same workload.

interface Variant {
  readonly name: string;
  readonly endpoint: Endpoint;
  readonly start: () => Promise<Server>;
}

export async function variantCases(
  ctx: BenchContext,
  prefix: string,
  pairsFile: string,
): Promise<void> {
  const reference = await startApi(ctx, 'api-reference', prefix);
  const variants: Variant[] = [
    {
      name: 'LOG_LEVEL=info (the default) instead of warn',
      endpoint: 'getInstallationCurrentEnergyFlow',
      start: () => startApi(ctx, 'api-log-info', prefix, [], { LOG_LEVEL: 'info' }),
    },
    {
      name: 'ioredis enableAutoPipelining (bench/servers/api-variant.ts)',
      endpoint: 'getInstallations',
      start: () =>
        startApi(ctx, 'api-autopipelining', prefix, [], {}, 'bench/servers/api-variant.ts'),
    },
  ];
  for (const variant of variants) {
    const server = await variant.start();
    const runs = { reference: [] as number[], variant: [] as number[] };
    const opts = {
      endpoint: variant.endpoint,
      pairsFile,
      durationS: Math.min(ctx.opts.caseSeconds, 5),
    };
    await runLoad(ctx, 'closed', { ...opts, origin: server.origin, durationS: 2 }, {});
    await runLoad(ctx, 'closed', { ...opts, origin: reference.origin, durationS: 2 }, {});
    for (let i = 0; i < 2; i++) {
      runs.reference.push(
        (await runLoad(ctx, 'closed', { ...opts, origin: reference.origin }, {})).result.rps,
      );
      runs.variant.push(
        (await runLoad(ctx, 'closed', { ...opts, origin: server.origin }, {})).result.rps,
      );
    }
    await server.child.stop();
    const v = spread(runs.variant);
    const r = spread(runs.reference);
    const row: Row = {
      section: 'experiment',
      name: `${variant.endpoint} req/s with ${variant.name}`,
      unit: 'req/s',
      candidate: v,
      baseline: r,
      ratio: v.median / r.median,
      note: 'baseline column = the API as run by the bench (LOG_LEVEL=warn)',
    };
    ctx.rows.push(row);
    printRow(row);
  }
  await reference.child.stop();
}
