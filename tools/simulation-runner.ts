import { setTimeout as sleep } from 'node:timers/promises';
import type { OutgoingMessage, Producer } from '../consumers/kafka/client.js';
import type { Config } from '../src/config.js';
import type { ProgressSample } from './progress.js';
import { createSimulation, type SimulationOptions } from './sim/simulation.js';

// Drives the simulation in real time and produces its events: installations first, then
// telemetry at the requested rate, every message keyed by its installation id.

export interface SimulatorRunOptions extends Omit<SimulationOptions, 'startMs'> {
  readonly eventsPerSecond: number;
  /** Stop after this long; null runs until `signal` aborts. */
  readonly durationSeconds: number | null;
}

export interface SimulatorDeps {
  readonly producer: Producer;
  readonly topics: Pick<Config['topics'], 'installations' | 'telemetry'>;
  readonly signal?: AbortSignal;
  readonly onProgress?: (sample: ProgressSample) => void;
  readonly now?: () => number;
  /** Writes an event's value; absent: JSON (tools/sim/registry-format.ts has the others). */
  readonly encodeValue?: (event: object) => string | Buffer;
}

export interface SimulatorResult extends ProgressSample {
  readonly installationsSent: number;
}

const TICK_MS = 100;

export async function runSimulator(
  deps: SimulatorDeps,
  options: SimulatorRunOptions,
): Promise<SimulatorResult> {
  const now = deps.now ?? Date.now;
  const startMs = now();
  const sim = createSimulation({ ...options, startMs });
  const endMs =
    options.durationSeconds === null ? Infinity : startMs + options.durationSeconds * 1000;

  const encode = deps.encodeValue ?? JSON.stringify;
  const message = (installationId: number, event: object): OutgoingMessage => ({
    key: String(installationId),
    value: encode(event),
  });
  const installations = sim.installationEvents(startMs).map((e) => message(e.installation.id, e));
  // The producer splits large sends into bounded requests itself.
  await deps.producer.send(deps.topics.installations, installations);

  // A second's worth at most per tick: after a stall the run catches up gradually, not in a burst.
  const burst = Math.max(1, Math.ceil(options.eventsPerSecond));
  let events = 0;
  const sample = (at: number): ProgressSample => ({
    events,
    elapsedMs: at - startMs,
    installations: options.installations,
    devices: sim.deviceCount,
    silentDevices: sim.silentDevices(at),
  });

  while (!deps.signal?.aborted) {
    const at = now();
    if (at >= endMs) break;
    const due = Math.min(
      burst,
      Math.floor((options.eventsPerSecond * (at - startMs)) / 1000) - events,
    );
    const batch: OutgoingMessage[] = [];
    let emptyRounds = 0;
    while (batch.length < due && emptyRounds < sim.sites.length) {
      const round = sim.nextRound(at);
      emptyRounds = round.events.length === 0 ? emptyRounds + 1 : 0;
      for (const event of round.events) batch.push(message(round.installationId, event));
    }
    if (batch.length > 0) {
      await deps.producer.send(deps.topics.telemetry, batch);
      events += batch.length;
    }
    deps.onProgress?.(sample(now()));
    await sleep(Math.min(TICK_MS, Math.max(0, endMs - now())), undefined, {
      signal: deps.signal,
    }).catch(() => undefined);
  }
  return { ...sample(now()), installationsSent: installations.length };
}
