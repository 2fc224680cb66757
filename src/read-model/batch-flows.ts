import type { Redis } from 'ioredis';
import type { DeviceRecord } from '../domain/device-record.js';
import {
  computeFlowFromInputs,
  type EnergyFlow,
  type FlowInput,
  flowInputOf,
} from '../domain/energy-flow.js';
import type { TelemetryWrites } from './device-store.js';
import type { InstallationRead } from './device-view.js';
import { execOrThrow } from './exec.js';
import { decodeFlowInputs, encodeFlowInput, flowInputsOfRecords } from './flow-inputs.js';
import { toMap } from './flow-store.js';
import { parseDeviceField, type ReadModelKeys } from './keys.js';

// The flows a telemetry batch writes: from each dirty installation's stored flow inputs plus the
// batch's own writes, without parsing any record the batch did not touch.

/**
 * A stored device record of these installations could not be read back, so their flows cannot be
 * computed: nothing was written. Not retriable; the caller drops the events that touched them.
 */
export class CorruptStoredDataError extends Error {
  readonly retriable = false;
  constructor(readonly installations: ReadonlyMap<number, string>) {
    super(`stored devices unreadable in installation(s) ${[...installations.keys()].join(', ')}`);
  }
}

export interface ComputedFlow {
  readonly flow: EnergyFlow;
  /** field -> stored flow inputs, null to delete the field. */
  readonly inputWrites: Map<string, string | null>;
  /** The stored inputs did not cover the devices: replace them whole. */
  readonly rewrite: boolean;
}

/**
 * The new flow of every dirty installation, from its stored flow inputs plus the batch's
 * writes. Where the inputs do not cover the devices hash (written before they existed), reads
 * the whole hash once and rewrites them. Throws CorruptStoredDataError when a record needed
 * then is not JSON.
 */
export async function flowsOfBatch(
  conn: Redis,
  keys: ReadModelKeys,
  result: TelemetryWrites,
  reads: ReadonlyMap<number, InstallationRead>,
  nowMs: number,
  onlineWindowSeconds: number,
): Promise<Map<number, ComputedFlow>> {
  const out = new Map<number, ComputedFlow>();
  const stale: number[] = [];
  const inputsOf = new Map<number, Map<string, FlowInput>>();
  for (const id of result.dirty) {
    const read = reads.get(id);
    const inputs = read ? decodeFlowInputs(read.inputs, read.devicesCount) : null;
    if (inputs === null) stale.push(id);
    else inputsOf.set(id, inputs);
  }
  const corrupt = new Map<number, string>();
  if (stale.length > 0) {
    const hashes = await hgetallMany(
      conn,
      stale.map((id) => keys.devices(id)),
    );
    stale.forEach((id, i) => {
      const hash = toMap(hashes[i] ?? {});
      for (const [field, json] of result.deviceWrites.get(id) ?? []) {
        if (json === null) hash.delete(field);
        else hash.set(field, json);
      }
      try {
        inputsOf.set(id, flowInputsOfRecords(hash, result.records));
      } catch (error) {
        corrupt.set(id, (error as Error).message);
      }
    });
  }
  if (corrupt.size > 0) throw new CorruptStoredDataError(corrupt);
  const rewrite = new Set(stale);
  for (const [id, inputs] of inputsOf) {
    const inputWrites = new Map<string, string | null>();
    if (rewrite.has(id)) {
      for (const [field, input] of inputs) inputWrites.set(field, encodeFlowInput(input));
    } else {
      for (const [field, json] of result.deviceWrites.get(id) ?? []) {
        if (json === null) {
          inputs.delete(field);
          inputWrites.set(field, null);
          continue;
        }
        const device = parseDeviceField(field);
        if (!device) continue;
        const record = result.records.get(json) ?? (JSON.parse(json) as DeviceRecord);
        const input = flowInputOf(device.category, record);
        inputs.set(field, input);
        inputWrites.set(field, encodeFlowInput(input));
      }
    }
    const flow = computeFlowFromInputs(inputs.values(), nowMs, onlineWindowSeconds);
    out.set(id, { flow, inputWrites, rewrite: rewrite.has(id) });
  }
  return out;
}

async function hgetallMany(
  conn: Redis,
  keys: readonly string[],
): Promise<Record<string, string>[]> {
  if (keys.length === 0) return [];
  const pipeline = conn.pipeline();
  for (const key of keys) pipeline.hgetall(key);
  return (await execOrThrow(pipeline)) as Record<string, string>[];
}
