import { parseTelemetryMessage } from '../../src/domain/event-parse.js';
import {
  encodeEvent,
  REGISTRY_FORMATS,
  type RegistryFormat,
  schemaEntryOf,
} from '../../src/registry/event-encoder.js';
import type { RegisteredSchema, RegistryClient } from '../../src/registry/registry-client.js';
import { registrySchemaFiles, SCHEMA_TYPES } from '../../src/registry/schema-files.js';
import { createRegistryDecoder } from '../../src/registry/value-decoder.js';
import { isFramed } from '../../src/registry/wire-format.js';
import { createRng } from '../../tools/sim/random.js';
import { selfCpuSeconds } from '../lib/cpu.js';
import { numberArg } from '../lib/options.js';
import { loadAverage } from '../lib/standalone.js';
import { median } from '../lib/stats.js';
import { fullState, liveState, stateEvent } from '../workload/device-state.js';
import { devicesOf } from '../workload/plan.js';

// Issue 56 item 6: the consumer's CPU per device.state event for each value format against
// plain JSON, on the same events, in one run. What differs between the formats is the step
// from the value's bytes to a validated event: the registry decode (writer schema cached, as
// after the first batch) and the parse; what follows (fold, Redis writes) is the same event
// whatever the format, so it is left out and the figures are that step alone, in this process.
// The events are the ingest reference's two traffic shapes (../shared/ingest-ref): `full`, every
// field of the category (a device's first report), and `live`, up to 12 numbers (every later
// report), over bench/workload's fleet.
//   npx tsx bench/cases/registry-formats.ts [--installations 1000] [--rounds 9]
// Rounds alternate the formats, each round in a rotated order; each figure is the median.

const INSTALLATIONS = numberArg('installations', 1_000);
const ROUNDS = numberArg('rounds', 9);
const FORMATS = ['json', ...REGISTRY_FORMATS] as const;
type Format = (typeof FORMATS)[number];
const SHAPES = ['full', 'live'] as const;

// The registry, in memory: our schemas under fixed ids (no I/O is measured).
const files = registrySchemaFiles();
const idOf = (format: RegistryFormat, name: string) =>
  files.findIndex((f) => f.format === format && f.entry.name === name) + 1;
const client: RegistryClient = {
  async schemaById(id): Promise<RegisteredSchema | null> {
    const file = files[id - 1];
    return file ? { schemaType: SCHEMA_TYPES[file.format], schema: file.text } : null;
  },
};

function eventsOf(shape: (typeof SHAPES)[number]): Record<string, unknown>[] {
  const rng = createRng(56);
  const events: Record<string, unknown>[] = [];
  const at = Date.now() - 60_000;
  for (let i = 1; i <= INSTALLATIONS; i++) {
    for (const device of devicesOf(1, i)) {
      const state = shape === 'full' ? fullState(1, device) : liveState(rng, device.category);
      events.push(stateEvent(i, device, at, state) as unknown as Record<string, unknown>);
    }
  }
  return events;
}

function encode(events: Record<string, unknown>[], format: Format): Uint8Array[] {
  return events.map((e) =>
    format === 'json'
      ? Buffer.from(JSON.stringify(e))
      : encodeEvent(e, format, idOf(format, schemaEntryOf(e).name)),
  );
}

async function main(): Promise<void> {
  const decoder = createRegistryDecoder(client);
  console.log(
    `registry formats: ${INSTALLATIONS} installations, ${ROUNDS} rounds, load ${loadAverage()}`,
  );
  console.log('shape  format        bytes/event  µs/event (median, spread)  / json');
  for (const shape of SHAPES) {
    const events = eventsOf(shape);
    const values = new Map(FORMATS.map((f) => [f, encode(events, f)] as const));
    for (const v of values.values()) await decoder.load(v);
    const samples = new Map<Format, number[]>(FORMATS.map((f) => [f, []]));
    let accepted = 0;
    const pass = (format: Format) => {
      const started = selfCpuSeconds();
      for (const value of values.get(format) ?? []) {
        let input: Uint8Array | Record<string, unknown> = value;
        if (isFramed(value)) {
          const decoded = decoder.decode(value);
          if (!decoded.ok) throw new Error(`${format}: ${decoded.reason} ${decoded.detail}`);
          input = decoded.value;
        }
        if (parseTelemetryMessage(input).ok) accepted += 1;
      }
      return ((selfCpuSeconds() - started) * 1e6) / events.length;
    };
    for (const f of FORMATS) pass(f); // warm: the JIT and the compiled schemas
    accepted = 0;
    for (let r = 0; r < ROUNDS; r++) {
      for (let k = 0; k < FORMATS.length; k++) {
        const f = FORMATS[(r + k) % FORMATS.length] as Format;
        samples.get(f)?.push(pass(f));
      }
    }
    // Every event of every format must be accepted, or the figures compare different work.
    if (accepted !== events.length * FORMATS.length * ROUNDS) {
      throw new Error(`${shape}: ${accepted} of ${events.length * FORMATS.length * ROUNDS} parsed`);
    }
    const json = median(samples.get('json') ?? []);
    for (const f of FORMATS) {
      const s = samples.get(f) ?? [];
      const bytes = (values.get(f) ?? []).reduce((n, v) => n + v.byteLength, 0) / events.length;
      console.log(
        `${shape.padEnd(6)} ${f.padEnd(13)} ${bytes.toFixed(0).padStart(11)}  ` +
          `${median(s).toFixed(2).padStart(8)} (${Math.min(...s).toFixed(2)}-${Math.max(...s).toFixed(2)})` +
          `${(median(s) / json).toFixed(2).padStart(14)}x`,
      );
    }
  }
}

await main();
