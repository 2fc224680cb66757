import { Kafka, logLevel } from 'kafkajs';
import { DEAD_LETTER_HEADERS } from '../../src/domain/dead-letter.js';
import { CATEGORY_ARRAY_NAME, type DeviceCategory } from '../../src/domain/device-fields.js';
import {
  applyDeviceState,
  type DeviceMeta,
  type DeviceRecord,
} from '../../src/domain/device-record.js';
import { computeEnergyFlow, type EnergyFlowData } from '../../src/domain/energy-flow.js';
import { parseTelemetryMessage } from '../../src/domain/event-parse.js';
import { createKeys } from '../../src/read-model/keys.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';

// The oracle: reads the telemetry topic as Kafka holds it (every partition from its start, in
// offset order) and folds it with the domain's own pure functions, then says where the read
// model and the API differ from that fold.

export interface Fold {
  /** `<installationId>|<category>:<deviceId>` -> the record the model must hold. */
  readonly devices: Map<string, { record: DeviceRecord; meta: DeviceMeta }>;
  /** `<partition>:<offset>` -> reason, for every message the consumers must dead-letter. */
  readonly rejects: Map<string, string>;
  readonly events: number;
}

export async function readTopic(
  brokers: string,
  topic: string,
): Promise<
  Array<{
    partition: number;
    offset: string;
    value: Buffer | null;
    headers: Record<string, string>;
  }>
> {
  const kafka = new Kafka({
    brokers: brokers.split(','),
    clientId: 'fault-oracle',
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const wanted = new Map(
    ends.filter((e) => e.high !== e.low).map((e) => [e.partition, BigInt(e.high)]),
  );
  const out: Array<{
    partition: number;
    offset: string;
    value: Buffer | null;
    headers: Record<string, string>;
  }> = [];
  if (wanted.size === 0) return out;
  const consumer = kafka.consumer({
    groupId: `oracle-${process.pid}-${Date.now()}-${Math.random()}`,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const reached = new Set<number>();
  await new Promise<void>((resolve, reject) => {
    consumer
      .run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          for (const m of batch.messages) {
            if (BigInt(m.offset) >= (wanted.get(batch.partition) ?? 0n)) continue;
            const headers: Record<string, string> = {};
            for (const [k, v] of Object.entries(m.headers ?? {})) headers[k] = String(v);
            out.push({ partition: batch.partition, offset: m.offset, value: m.value, headers });
          }
          const end = wanted.get(batch.partition);
          if (end !== undefined && BigInt(batch.lastOffset()) + 1n >= end)
            reached.add(batch.partition);
          if (reached.size === wanted.size) resolve();
        },
      })
      .catch(reject);
  });
  await consumer.disconnect();
  out.sort((a, b) => a.partition - b.partition || Number(BigInt(a.offset) - BigInt(b.offset)));
  return out;
}

export async function foldTelemetry(brokers: string, topic: string): Promise<Fold> {
  const devices = new Map<string, { record: DeviceRecord; meta: DeviceMeta }>();
  const rejects = new Map<string, string>();
  let events = 0;
  for (const m of await readTopic(brokers, topic)) {
    events++;
    const parsed = parseTelemetryMessage(m.value);
    const at = `${m.partition}:${m.offset}`;
    if (!parsed.ok) {
      rejects.set(at, parsed.reason);
      continue;
    }
    const event = parsed.event;
    if (event.type !== 'device.state') continue;
    const id = `${event.installationId}|${event.category}:${event.deviceId}`;
    const current = devices.get(id);
    const result = applyDeviceState(
      current?.record ?? null,
      event,
      { nowMs: Date.now(), futureSkewSeconds: 300 },
      current?.meta,
    );
    if (result.kind === 'rejected') rejects.set(at, result.reason);
    else devices.set(id, { record: result.record, meta: result.meta });
  }
  return { devices, rejects, events };
}

export interface Comparison {
  readonly mismatches: number;
  readonly examples: string[];
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function byInstallation(fold: Fold): Map<number, Map<string, DeviceRecord>> {
  const out = new Map<number, Map<string, DeviceRecord>>();
  for (const [id, { record }] of fold.devices) {
    const [inst, field] = id.split('|') as [string, string];
    const m = out.get(Number(inst)) ?? new Map<string, DeviceRecord>();
    m.set(field, record);
    out.set(Number(inst), m);
  }
  return out;
}

/** Every installation's devices hash and flow against the fold. */
export async function compareModel(
  redis: RedisClient,
  prefix: string,
  fold: Fold,
  installations: readonly number[],
  onlineWindowSeconds: number,
): Promise<Comparison> {
  const keys = createKeys(prefix);
  const expected = byInstallation(fold);
  const examples: string[] = [];
  let mismatches = 0;
  const miss = (what: string) => {
    mismatches++;
    if (examples.length < 5) examples.push(what);
  };
  for (const inst of installations) {
    const want = expected.get(inst) ?? new Map<string, DeviceRecord>();
    const [stored, flowData, installation] = await Promise.all([
      redis.hgetall(keys.devices(inst)),
      redis.hget(keys.flow(inst), 'data'),
      redis.get(keys.installation(inst)),
    ]);
    if (installation === null) miss(`installation ${inst} missing`);
    for (const [field, record] of want) {
      const got = stored[field];
      if (got === undefined) miss(`${inst} ${field} missing`);
      else if (!same(JSON.parse(got), record))
        miss(`${inst} ${field}: ${got} != ${JSON.stringify(record)}`);
    }
    for (const field of Object.keys(stored)) if (!want.has(field)) miss(`${inst} ${field} extra`);
    const flow = computeEnergyFlow(
      [...want].map(([field, record]) => ({
        category: field.split(':')[0] as DeviceCategory,
        record,
      })),
      Date.now(),
      onlineWindowSeconds,
    ).data;
    const storedFlow = flowData === null ? null : (JSON.parse(flowData) as EnergyFlowData | null);
    if (!sameFlow(storedFlow, flow)) miss(`${inst} flow ${flowData} != ${JSON.stringify(flow)}`);
  }
  return { mismatches, examples };
}

// Flow sums may differ in the last bit with summation order (src/read-model/flow-inputs.ts), so
// a rounded power may differ by one.
function sameFlow(a: EnergyFlowData | null, b: EnergyFlowData | null): boolean {
  if (a === null || b === null) return a === b;
  return (Object.keys(b) as Array<keyof EnergyFlowData>).every((k) => {
    const x = a[k];
    const y = b[k];
    return typeof x === 'number' && typeof y === 'number' ? Math.abs(x - y) <= 1 : x === y;
  });
}

/** The API's getInstallationDevices for every installation against the fold. */
export async function compareApi(
  apiBase: string,
  apiKey: string,
  fold: Fold,
  installations: readonly number[],
): Promise<Comparison> {
  const expected = byInstallation(fold);
  const examples: string[] = [];
  let mismatches = 0;
  for (const inst of installations) {
    const res = await fetch(`${apiBase}/getInstallationDevices?installationId=${inst}`, {
      headers: { 'api-key': apiKey },
    });
    const body = (await res.json()) as Record<string, unknown>;
    const want = expected.get(inst) ?? new Map<string, DeviceRecord>();
    if (res.status !== 200) {
      mismatches++;
      if (examples.length < 5) examples.push(`${inst}: API ${res.status} ${JSON.stringify(body)}`);
      continue;
    }
    let served = 0;
    for (const [field, record] of want) {
      const [category, id] = field.split(':') as [DeviceCategory, string];
      const list = (body[CATEGORY_ARRAY_NAME[category]] ?? []) as Array<Record<string, unknown>>;
      const got = list.find((d) => d.id === Number(id));
      served++;
      if (!got || !same(got, record)) {
        mismatches++;
        if (examples.length < 5) examples.push(`${inst} ${field} API ${JSON.stringify(got)}`);
      }
    }
    const total = Object.values(CATEGORY_ARRAY_NAME).reduce(
      (n, name) => n + ((body[name] as unknown[] | undefined)?.length ?? 0),
      0,
    );
    if (total !== served) mismatches++;
  }
  return { mismatches, examples };
}

/** Dead letters of the topic: `<partition>:<offset>` -> reasons, in order. */
export async function deadLetters(
  brokers: string,
  deadLetterTopic: string,
  sourceTopic: string,
): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const m of await readTopic(brokers, deadLetterTopic)) {
    if (m.headers[DEAD_LETTER_HEADERS.sourceTopic] !== sourceTopic) continue;
    const at = `${m.headers[DEAD_LETTER_HEADERS.sourcePartition]}:${m.headers[DEAD_LETTER_HEADERS.sourceOffset]}`;
    out.set(at, [...(out.get(at) ?? []), m.headers[DEAD_LETTER_HEADERS.reason] ?? '?']);
  }
  return out;
}
