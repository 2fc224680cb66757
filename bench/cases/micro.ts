import { hashApiKey } from '../../src/domain/access-rule.js';
import {
  applyDeviceState,
  type DeviceRecord,
  parseStoredDevice,
  readStoredDevice,
  serializeDevice,
} from '../../src/domain/device-record.js';
import { computeEnergyFlow, serializeEnergyFlow } from '../../src/domain/energy-flow.js';
import { parseTelemetryMessage } from '../../src/domain/event-parse.js';
import { deviceField } from '../../src/read-model/keys.js';
import { flowFromStoredDevices } from '../../src/read-model/stored-flow.js';
import { createRng } from '../../tools/sim/random.js';
import type { BenchContext } from '../lib/context.js';
import { printRow, type Row } from '../lib/report.js';
import { fullState, liveState, stateEvent } from '../workload/device-state.js';
import type { Workload } from '../workload/plan.js';

// In-process cases (pino style): the pure steps of the consumer's per-event path and of the
// API's per-request path, each timed against a named baseline in the same process.

function timeNs(fn: (i: number) => unknown, minMs = 300): number {
  for (let i = 0; i < 2_000; i++) fn(i);
  let n = 0;
  const t0 = performance.now();
  let sink: unknown;
  while (performance.now() - t0 < minMs) {
    for (let i = 0; i < 500; i++) sink = fn(n++);
  }
  void sink;
  return ((performance.now() - t0) * 1e6) / n;
}

export function microCases(ctx: BenchContext, w: Workload): void {
  const rng = createRng(3);
  const now = Date.now();
  const samples = Array.from({ length: 512 }, (_, i) => {
    const inst = (i % w.installationCount) + 1;
    const devices = w.devicesOf(inst);
    const device = devices[i % devices.length] as (typeof devices)[number];
    const first = applyDeviceState(
      null,
      stateEvent(inst, device, now - 60_000, fullState(w.seed, device)),
      {
        nowMs: now,
        futureSkewSeconds: 300,
      },
    );
    const record = (first as { record: DeviceRecord }).record;
    const live = stateEvent(inst, device, now, liveState(rng, device.category));
    return {
      device,
      record,
      stored: serializeDevice(device.category, record),
      message: Buffer.from(JSON.stringify(live)),
      live,
    };
  });
  const installations = Array.from({ length: 64 }, (_, i) => {
    const id = (i % w.installationCount) + 1;
    const hash = new Map<string, string>();
    for (const device of w.devicesOf(id)) {
      const applied = applyDeviceState(
        null,
        stateEvent(id, device, now - 60_000, fullState(w.seed, device)),
        {
          nowMs: now,
          futureSkewSeconds: 300,
        },
      );
      hash.set(
        deviceField(device.category, device.deviceId),
        serializeDevice(device.category, (applied as { record: DeviceRecord }).record),
      );
    }
    return hash;
  });
  const at = <T>(list: readonly T[], i: number) => list[i % list.length] as T;
  const jsonParse = timeNs((i) => JSON.parse(at(samples, i).stored));
  const cases: Array<[string, number, string]> = [
    ['consumer: JSON.parse of a stored device record (baseline)', jsonParse, 'baseline'],
    [
      'consumer: readStoredDevice (JSON.parse + key check; what the consumer merges into)',
      timeNs((i) => readStoredDevice(at(samples, i).device.category, at(samples, i).stored)),
      'per event',
    ],
    [
      'schema check: parseStoredDevice (JSON.parse + zod; the consumer used it before)',
      timeNs((i) => parseStoredDevice(at(samples, i).device.category, at(samples, i).stored)),
      'not on the hot path',
    ],
    [
      'consumer: parseTelemetryMessage of a live update',
      timeNs((i) => parseTelemetryMessage(at(samples, i).message)),
      'per event',
    ],
    [
      'consumer: applyDeviceState',
      timeNs((i) =>
        applyDeviceState(at(samples, i).record, at(samples, i).live, {
          nowMs: now,
          futureSkewSeconds: 300,
        }),
      ),
      'per event',
    ],
    [
      'consumer: serializeDevice',
      timeNs((i) => serializeDevice(at(samples, i).device.category, at(samples, i).record)),
      'per event',
    ],
    [
      'api: flowFromStoredDevices + serializeEnergyFlow, one installation (expired stored flow; the consumer computes from flow inputs)',
      timeNs((i) =>
        serializeEnergyFlow(flowFromStoredDevices(at(installations, i), now, 3_600).data),
      ),
      'per request whose stored flow expired',
    ],
    [
      'consumer: computeEnergyFlow on parsed records',
      timeNs((i) =>
        computeEnergyFlow(
          [{ category: at(samples, i).device.category, record: at(samples, i).record }],
          now,
          3_600,
        ),
      ),
      'one device',
    ],
    [
      'api: hashApiKey (SHA-256 of the key)',
      timeNs((i) => hashApiKey(`itk_${'a'.repeat(39)}${i % 10}`)),
      'per request',
    ],
  ];
  for (const [name, ns, note] of cases) {
    const row: Row = {
      section: 'micro (in-process)',
      name,
      unit: 'µs/op',
      candidate: ns / 1000,
      baseline: jsonParse / 1000,
      ratio: ns / jsonParse,
      note: `${note}; ratio = cost in units of one JSON.parse of a stored record`,
    };
    ctx.rows.push(row);
    printRow(row);
  }
}
