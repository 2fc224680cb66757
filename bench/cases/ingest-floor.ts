import { PerformanceObserver } from 'node:perf_hooks';
import { applyDeviceState, type DeviceRecord } from '../../src/domain/device-record.js';
import { parseTelemetryMessage } from '../../src/domain/event-parse.js';
import type { TelemetryEvent } from '../../src/domain/events.js';
import type { InstallationState } from '../../src/projection/installation-state.js';
import { foldTelemetry } from '../../src/projection/telemetry-fold.js';
import { writeInstallationArgs } from '../../src/read-model/installation-write.js';
import { createRng } from '../../tools/sim/random.js';
import type { BenchContext } from '../lib/context.js';
import { printRow, type Row } from '../lib/report.js';
import { spread } from '../lib/stats.js';
import { liveMessages, TELEMETRY_PARTITIONS } from '../lib/telemetry-ingest.js';
import { fullState, stateEvent } from '../workload/device-state.js';
import type { Workload } from '../workload/plan.js';

// In process, no Kafka, no Redis: the consumer's pure per-event path (parse and validate, the
// fold of partition batches, the script arguments with each changed record's JSON) against the
// least any consumer of this contract does per event (parse the JSON, merge the update into
// the device's record, serialize the record). The gap between the consumer process's CPU per
// event (ingest case) and these shows what the clients cost (kafkajs, ioredis) and what is left
// to win in the pure code; the floor shows what no consumer of this contract gets below on
// this machine's core.

/** Messages a partition batch holds here, about what kafkajs hands the consumer per fetch. */
const BATCH = 500;
const CTX = { futureSkewSeconds: 300, onlineWindowSeconds: 3_600 };

type Side = 'floor' | 'project';

export async function ingestFloor(ctx: BenchContext, w: Workload): Promise<void> {
  const section = 'ingest, in process';
  const total = ctx.opts.ingestEvents;
  const rng = createRng(ctx.opts.seed + 21);
  const start = Date.now();
  const records = new Map<string, Record<string, unknown>>();
  const states = new Map<number, InstallationState>();
  for (let inst = 1; inst <= w.installationCount; inst++) {
    const first: TelemetryEvent[] = [];
    for (const d of w.devicesOf(inst)) {
      const event = stateEvent(inst, d, start - 60_000, fullState(w.seed, d));
      first.push(event);
      const applied = applyDeviceState(null, event, { nowMs: start, ...CTX });
      records.set(`${d.category}:${d.deviceId}`, (applied as { record: DeviceRecord }).record);
    }
    foldInto(states, first, start);
  }

  const gc = { ms: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) gc.ms += entry.duration;
  });
  observer.observe({ entryTypes: ['gc'] });

  const cpu = new Map<Side, number[]>([
    ['floor', []],
    ['project', []],
  ]);
  const gcShare = new Map<Side, number[]>([
    ['floor', []],
    ['project', []],
  ]);
  const run = async (side: Side, batches: readonly Buffer[][]) => {
    const nowMs = Date.now();
    const gc0 = gc.ms;
    const t0 = process.cpuUsage();
    let sink = 0;
    for (const batch of batches) {
      if (side === 'floor') {
        for (const message of batch) {
          const event = JSON.parse(message.toString('utf8'));
          const field = `${event.category}:${event.deviceId}`;
          const next = { ...records.get(field), ...event.state, lastSeenDate: event.observedAt };
          records.set(field, next);
          sink += JSON.stringify(next).length;
        }
      } else {
        const events: TelemetryEvent[] = [];
        for (const message of batch) {
          const parsed = parseTelemetryMessage(message);
          if (parsed.ok) events.push(parsed.event);
        }
        sink += foldInto(states, events, nowMs);
      }
    }
    const used = process.cpuUsage(t0);
    // GC entries reach the observer on a later turn.
    await new Promise((resolve) => setTimeout(resolve, 100));
    cpu.get(side)?.push((used.user + used.system) / total);
    gcShare.get(side)?.push((gc.ms - gc0) / ((used.user + used.system) / 1000));
    return sink;
  };

  for (let i = 0; i < ctx.opts.alternations; i++) {
    for (const side of i % 2 === 0
      ? (['floor', 'project'] as const)
      : (['project', 'floor'] as const)) {
      // Fresh, later events every round, so the fold applies them all (none is stale).
      const messages = liveMessages(w, total, Date.now(), rng);
      await run(side, partitionBatches(messages));
    }
  }
  observer.disconnect();

  const floor = spread(cpu.get('floor') ?? []);
  const project = spread(cpu.get('project') ?? []);
  const pct = (side: Side) => `${(spread(gcShare.get(side) ?? []).median * 100).toFixed(0)} %`;
  const row: Row = {
    section,
    name: `CPU per event: the consumer's pure path (parse, fold, script arguments) vs the JSON floor (parse, merge, stringify); ${total} live updates, ${w.installationCount} installations held`,
    unit: 'µs',
    candidate: project,
    baseline: floor,
    ratio: project.median / floor.median,
    note: `floor alone allows ${Math.round(1e6 / floor.median).toLocaleString('en-US')} events/s on one core; GC pauses against CPU time: project ${pct('project')}, floor ${pct('floor')}`,
  };
  ctx.rows.push(row);
  printRow(row);
}

/** Folds `events` into `states` (the partition owner's memory); returns the writes' arguments. */
function foldInto(
  states: Map<number, InstallationState>,
  events: readonly TelemetryEvent[],
  nowMs: number,
): number {
  const { plan } = foldTelemetry({ states, index: new Map() }, events, { nowMs, ...CTX });
  let args = 0;
  for (const write of plan.installations.values()) {
    args += writeInstallationArgs(write).length;
    states.set(write.id, write.next);
  }
  return args;
}

/**
 * Messages in batches of BATCH per partition, an installation's events always in one partition as
 * on the keyed topic (by id modulo the partition count, not Kafka's hash: only the grouping counts).
 */
function partitionBatches(messages: ReadonlyArray<{ key: string; value: string }>): Buffer[][] {
  const open = new Map<number, Buffer[]>();
  const batches: Buffer[][] = [];
  for (const m of messages) {
    const partition = Number(m.key) % TELEMETRY_PARTITIONS;
    const batch = open.get(partition) ?? [];
    batch.push(Buffer.from(m.value));
    open.set(partition, batch);
    if (batch.length === BATCH) {
      batches.push(batch);
      open.delete(partition);
    }
  }
  batches.push(...open.values());
  return batches;
}
