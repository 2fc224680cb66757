import { createKeys, deviceField } from '../../src/read-model/keys.js';
import { createRng } from '../../tools/sim/random.js';
import { liveState, stateEvent } from '../workload/device-state.js';
import type { Workload } from '../workload/plan.js';
import type { BenchContext } from './context.js';
import type { Message } from './stack.js';
import { Samples, summarizeLatencies } from './stats.js';

// Produce-to-visible freshness: live reports at a set rate, and probes that watch the served
// record until it shows them.

/** The oldest pending probes polled per round, and the round's period. */
export const POLL_BATCH = 32;
export const POLL_MS = 5;

export interface FreshnessRun {
  stop(): Promise<{
    rate: number;
    probes: number;
    unseen: number;
    p50: number;
    p99: number;
    max: number;
  }>;
}

/** A probed device: when its probed report was due, and what its record shows once visible. */
interface Probe {
  readonly intended: number;
  /** The live measurements of the latest report sent for the device since the probed one. */
  expected: Record<string, unknown>;
  expectedAt: number;
}

/**
 * Produces device.state at `rate`/s as the throughput case does (gateways: a random installation
 * reports every device it has, at once, with one observedAt = the report's scheduled send time),
 * so that "50 % of max" is half of the maximum of the same traffic. Watches the served record of
 * every `probeEvery`-th event's device (under `prefix`: the project's or the reference's) until
 * it shows the report's live measurements. A later report of the same device replaces the
 * values awaited (the record shows the latest), so a probe counts until the latest report sent
 * is visible: an upper bound. Freshness = seen - observedAt.
 */
export function startFreshness(
  ctx: BenchContext,
  w: Workload,
  prefix: string,
  topic: string,
  rate: number,
  probeEvery = 10,
): FreshnessRun {
  const keys = createKeys(prefix);
  const rng = createRng(ctx.opts.seed + 7);
  /** `<devices key> <device field>` -> its probe. */
  const pending = new Map<string, Probe>();
  const latencies = new Samples();
  let produced = 0;
  let probes = 0;
  let stopping = false;
  const start = Date.now();
  const sends: Promise<unknown>[] = [];

  const watch = (key: string, intended: number, state: Record<string, unknown>) => {
    const probe = pending.get(key);
    if (probe === undefined) {
      if (produced % probeEvery !== 0) return;
      pending.set(key, { intended, expected: state, expectedAt: intended });
      probes++;
    } else if (intended > probe.expectedAt) {
      probe.expected = state;
      probe.expectedAt = intended;
    } else {
      // Two reports of one device due in the same millisecond: which one the record keeps is
      // the consumer's choice, so this probe cannot tell; it is left out.
      pending.delete(key);
      probes--;
    }
  };

  const produceTick = () => {
    if (stopping) return;
    const due = Math.floor(((Date.now() - start) * rate) / 1000);
    const messages: Message[] = [];
    while (produced < due) {
      const intended = start + Math.floor((produced * 1000) / rate);
      const inst = rng.int(1, w.installationCount);
      for (const device of w.devicesOf(inst)) {
        const state = liveState(rng, device.category);
        const event = stateEvent(inst, device, intended, state);
        messages.push({ key: String(inst), value: JSON.stringify(event) });
        watch(
          `${keys.devices(inst)} ${deviceField(device.category, device.deviceId)}`,
          intended,
          state,
        );
        produced++;
      }
    }
    if (messages.length > 0) sends.push(ctx.kafka.producer.send({ topic, acks: 1, messages }));
    setTimeout(produceTick, 10);
  };

  let polling = true;
  const poll = async () => {
    while (polling) {
      // The oldest probes only: they become visible first, and the poll stays cheap however
      // far the consumer falls behind.
      const entries: Array<[string, Probe]> = [];
      for (const entry of pending) {
        entries.push(entry);
        if (entries.length === POLL_BATCH) break;
      }
      if (entries.length > 0) {
        const pipeline = ctx.redis.pipeline();
        for (const [probe] of entries) {
          const [key, field] = probe.split(' ') as [string, string];
          pipeline.hget(key, field);
        }
        const replies = (await pipeline.exec()) ?? [];
        const now = Date.now();
        entries.forEach(([key, probe], i) => {
          const stored = replies[i]?.[1] as string | null | undefined;
          if (stored && shows(JSON.parse(stored) as Record<string, unknown>, probe.expected)) {
            latencies.push(now - probe.intended);
            pending.delete(key);
          }
        });
      }
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  };
  produceTick();
  const poller = poll();

  return {
    async stop() {
      stopping = true;
      const elapsed = (Date.now() - start) / 1000;
      await Promise.all(sends);
      const deadline = Date.now() + 10_000;
      while (pending.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      polling = false;
      await poller;
      const s = summarizeLatencies(latencies.values());
      return {
        rate: produced / elapsed,
        probes,
        unseen: pending.size,
        p50: s.p50,
        p99: s.p99,
        max: s.max,
      };
    },
  };
}

/** Whether a served record carries every live measurement of a report (arrays by value). */
const shows = (record: Record<string, unknown>, state: Record<string, unknown>): boolean =>
  Object.entries(state).every(([name, value]) =>
    Array.isArray(value)
      ? JSON.stringify(record[name]) === JSON.stringify(value)
      : record[name] === value,
  );

export type FreshnessResult = Awaited<ReturnType<FreshnessRun['stop']>>;
