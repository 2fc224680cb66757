import { CODECS } from '../../consumers/kafka/codecs.js';
import { parseTelemetryMessage } from '../../src/domain/event-parse.js';
import { type Codec, startJavaProducer } from '../../tools/java-producer.js';
import { createRng } from '../../tools/sim/random.js';
import type { BenchContext } from '../lib/context.js';
import { printRow, type Row } from '../lib/report.js';
import { KAFKA_BROKERS } from '../lib/stack.js';
import { spread } from '../lib/stats.js';
import {
  createTelemetryTopic,
  type IngestSetup,
  liveMessages,
  measureConsumption,
  startTelemetryConsumer,
} from '../lib/telemetry-ingest.js';

// Ingest fed as production feeds it (issue 13): record batches written by the Java client with
// lz4, its usual setting, against the same client writing them uncompressed; the consumer
// process on each, alternating which goes first. The Java producer runs with its defaults
// (batch.size 16 KB, linger 5 ms, acks=all, idempotent: infra/java-producer/Producer.java).
// What decompression costs the consumer: its CPU per event on each side, and the decode of one
// lz4 frame per 16 KB of events in process, against parsing the same events.

const SIDES: readonly Codec[] = ['none', 'lz4'];
/** The Java client's default batch.size: what one of its record batches holds at most. */
const JAVA_BATCH_BYTES = 16 * 1024;

interface Side {
  readonly rate: number;
  /** Consumer CPU per event, µs. */
  readonly cpuUs: number;
}

export async function ingestCodecs(ctx: BenchContext, setup: IngestSetup): Promise<void> {
  const section = 'ingest, Java producer';
  const rng = createRng(ctx.opts.seed + 13);
  const total = ctx.opts.ingestEvents;
  const java = await startJavaProducer(KAFKA_BROKERS.split(','));
  const sides = new Map<Codec, Side[]>(SIDES.map((codec) => [codec, []]));
  try {
    for (let i = 0; i < ctx.opts.alternations; i++) {
      for (const codec of i % 2 === 0 ? SIDES : [...SIDES].reverse()) {
        const name = `ingest-java-${codec}-${i}`;
        const topic = await createTelemetryTopic(ctx, name);
        // Generated now, so every side's events are newer than the model: the same work each.
        for (const m of liveMessages(setup.workload, total, Date.now(), rng))
          java.send(codec, topic, m.key, m.value);
        await java.flush();
        const consumer = await startTelemetryConsumer(ctx, setup, name, topic);
        const run = await measureConsumption(
          ctx,
          consumer.group,
          topic,
          total,
          [consumer.child],
          performance.now(),
        );
        await consumer.child.stop();
        sides.get(codec)?.push({ rate: run.rate, cpuUs: (run.cores * run.seconds * 1e6) / total });
        console.log(`  ${codec} run ${i + 1}: ${run.rate.toFixed(0)} events/s`);
      }
    }
  } finally {
    await java.close();
  }
  const of = (codec: Codec, pick: (s: Side) => number) =>
    spread((sides.get(codec) ?? []).map(pick));
  const rate = { lz4: of('lz4', (s) => s.rate), none: of('none', (s) => s.rate) };
  const cpu = { lz4: of('lz4', (s) => s.cpuUs), none: of('none', (s) => s.cpuUs) };
  const inProcess = await decodeCost(setup, rng);
  const rows: Row[] = [
    {
      section,
      name: `consumer process events/s, lz4 batches vs uncompressed (both from the Java client, ${total} live updates per run)`,
      unit: 'events/s',
      candidate: rate.lz4,
      baseline: rate.none,
      ratio: rate.lz4.median / rate.none.median,
      note: 'Java client defaults (batch.size 16 KB, linger 5 ms); sides alternate which goes first',
    },
    {
      section,
      name: 'consumer CPU per event, lz4 vs uncompressed',
      unit: 'µs',
      candidate: cpu.lz4,
      baseline: cpu.none,
      ratio: cpu.lz4.median / cpu.none.median,
      note: `difference ${(cpu.lz4.median - cpu.none.median).toFixed(1)} µs per event: decompression and the larger fetches it allows, whole process`,
    },
    {
      section,
      name: 'lz4 decode per event in process (CODECS.lz4, one frame per 16 KB of events) vs parsing the event',
      unit: 'µs',
      candidate: inProcess.decodeUs,
      baseline: inProcess.parseUs,
      ratio: inProcess.decodeUs / inProcess.parseUs,
      note: `frames ${inProcess.ratio.toFixed(2)}x smaller than the events they hold`,
    },
  ];
  for (const row of rows) {
    ctx.rows.push(row);
    printRow(row);
  }
}

/** µs per event to decode lz4 frames of live events as the consumer does, and to parse them. */
async function decodeCost(setup: IngestSetup, rng: ReturnType<typeof createRng>) {
  const values = liveMessages(setup.workload, 4_000, Date.now(), rng).map((m) =>
    Buffer.from(m.value),
  );
  const chunks: Buffer[][] = [[]];
  let bytes = 0;
  for (const value of values) {
    if (bytes + value.length > JAVA_BATCH_BYTES) {
      chunks.push([]);
      bytes = 0;
    }
    chunks.at(-1)?.push(value);
    bytes += value.length;
  }
  const codec = CODECS.lz4();
  const raw = chunks.map((c) => Buffer.concat(c));
  const frames = await Promise.all(raw.map((r) => codec.compress({ buffer: r })));
  const time = async (fn: () => Promise<unknown> | unknown) => {
    await fn();
    const rounds = 5;
    const t0 = performance.now();
    for (let r = 0; r < rounds; r++) await fn();
    return ((performance.now() - t0) * 1000) / (rounds * values.length);
  };
  const decodeUs = await time(async () => {
    for (const frame of frames) await codec.decompress(frame);
  });
  const parseUs = await time(() => {
    for (const value of values) parseTelemetryMessage(value);
  });
  const rawBytes = raw.reduce((n, r) => n + r.length, 0);
  const frameBytes = frames.reduce((n, f) => n + f.length, 0);
  return { decodeUs, parseUs, ratio: rawBytes / frameBytes };
}
