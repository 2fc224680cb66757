import type { BenchContext } from '../lib/context.js';
import { printRow, type Row } from '../lib/report.js';
import { type IngestSetup, startFreshness, startLiveConsumer } from './ingest.js';
import { closedLoopReads, type ReadServers } from './reads.js';

// Reads while telemetry is ingested at 50 % of the measured maximum: the consumer process and
// the producer keep running while baseline and API alternate under closed-loop load.

export async function mixedCase(
  ctx: BenchContext,
  setup: IngestSetup,
  servers: ReadServers,
  maxIngest: number,
): Promise<void> {
  const live = await startLiveConsumer(ctx, setup, 'mixed');
  const rate = Math.max(10, Math.floor(maxIngest * 0.5));
  const run = startFreshness(ctx, setup.workload, setup.prefix, live.topic, rate);
  try {
    await closedLoopReads(
      ctx,
      servers,
      `mixed (ingest ${rate} events/s), 64 conns`,
      ['getInstallationCurrentEnergyFlow', 'getInstallationDevices'],
      Math.min(2, ctx.opts.alternations),
    );
  } finally {
    const f = await run.stop();
    await live.child.stop();
    for (const [p, v] of [
      ['p50', f.p50],
      ['p99', f.p99],
    ] as const) {
      const row: Row = {
        section: 'mixed',
        name: `produce-to-visible ${p} while reads run`,
        unit: 'ms',
        candidate: v,
        note:
          p === 'p50'
            ? `${f.rate.toFixed(0)} events/s; ${f.probes} probes, ${f.unseen} unseen`
            : undefined,
      };
      ctx.rows.push(row);
      printRow(row);
    }
  }
}
