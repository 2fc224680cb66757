import { COMPATIBILITY, SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaMessage } from '../../consumers/kafka/client.js';
import { type RegistryFormat, toRegistryForm } from '../../src/registry/event-encoder.js';
import { createRegistryAdmin, RegistryRequestError } from '../../src/registry/registry-admin.js';
import { registrySchemaFiles } from '../../src/registry/schema-files.js';
import { frame } from '../../src/registry/wire-format.js';
import { type RegistryInstance, sharedRegistry } from '../support/registry.js';
import { waitFor } from '../support/stack.js';
import {
  devicesOf,
  type Harness,
  installation,
  iso,
  startHarness,
} from './support/consumer-harness.js';

// Registry-framed values from Node producers on @kafkajs/confluent-schema-registry (Avro,
// Protobuf, JSON Schema) through the real Apicurio Registry and Kafka into the read model, as
// a JSON producer's would be; beside JSON on one partition; a schema evolved while the
// consumers run; an incompatible change refused; unknown ids and undecodable bytes
// dead-lettered with their own reasons.

let registry: RegistryInstance;
let h: Harness;
let library: SchemaRegistry;
const now = Date.now();
const until = <T>(what: string, probe: () => Promise<T | undefined>) =>
  waitFor(what, probe, 30_000);
const reason = (m: KafkaMessage) => m.headers['x-reason']?.toString();

const files = registrySchemaFiles();
const schemaText = (format: RegistryFormat, name: string): string => {
  const file = files.find((f) => f.format === format && f.entry.name === name);
  if (!file) throw new Error(`no ${format} schema ${name}`);
  return file.text;
};
const LIBRARY_TYPES = {
  avro: SchemaType.AVRO,
  protobuf: SchemaType.PROTOBUF,
  'json-schema': SchemaType.JSON,
} as const;

/** Registers our schema of `name` under a subject of this test, through the library. */
async function libraryId(format: RegistryFormat, name: string, subject: string): Promise<number> {
  const { id } = await library.register(
    { type: LIBRARY_TYPES[format], schema: schemaText(format, name) },
    // Apicurio answers GET /config/<subject> with NONE, not 404: name the rule explicitly.
    { subject, compatibility: COMPATIBILITY.BACKWARD },
  );
  return id;
}

// A device (category, id) belongs to one installation: each installation has its own ids.
const battery = (inst: number, n: number, atMs: number, state: Record<string, unknown>) => ({
  type: 'device.state',
  installationId: inst,
  category: 'battery',
  deviceId: inst * 10 + n,
  observedAt: iso(atMs),
  state,
});

async function encodeWithLibrary(
  format: RegistryFormat,
  event: Record<string, unknown>,
  id: number,
) {
  return library.encode(id, toRegistryForm(event, format));
}

beforeAll(async () => {
  registry = sharedRegistry();
  const ajv = new Ajv2020({ strict: false });
  addFormats.default(ajv);
  library = new SchemaRegistry({ host: registry.url }, { [SchemaType.JSON]: { ajvInstance: ajv } });
  h = await startHarness('registry', { env: { SCHEMA_REGISTRY_URL: registry.url } });
});
afterAll(async () => {
  await h?.stop();
});

describe('registry-framed values', () => {
  it('projects Avro, Protobuf and JSON Schema from @kafkajs/confluent-schema-registry as JSON', async () => {
    const topic = h.config.topics.telemetry;
    const formats = ['avro', 'protobuf', 'json-schema'] as const;
    for (const [i, format] of formats.entries()) {
      const inst = 9201 + i;
      const installationId = await libraryId(
        format,
        'InstallationUpserted',
        `${h.config.topics.installations}-${format}-InstallationUpserted`,
      );
      const upsert = {
        type: 'installation.upserted',
        occurredAt: iso(now - 5_000),
        installation: installation(inst, `Site ${format}`),
        companyId: null,
      };
      await h.send(
        h.config.topics.installations,
        String(inst),
        await encodeWithLibrary(format, upsert, installationId),
      );
      const stateId = await libraryId(format, 'BatteryState', `${topic}-${format}-BatteryState`);
      const event = battery(inst, 1, now - 1_000, {
        manufacturer: ' BYD ',
        soe: 61.5,
        powerDc: -800,
        soh: null,
      });
      await h.send(topic, String(inst), await encodeWithLibrary(format, event, stateId));
    }
    for (const [i, format] of formats.entries()) {
      const inst = 9201 + i;
      const device = await until(
        `the ${format} device`,
        async () => (await devicesOf(h, inst))[`battery:${inst * 10 + 1}`],
      );
      expect(device).toMatchObject({ manufacturer: 'BYD', soe: 61.5, powerDc: -800, soh: null });
      const stored = await h.redis.get(h.keys.installation(inst));
      expect(stored && JSON.parse(stored)).toMatchObject({ name: `Site ${format}` });
    }
    expect((await h.deadLetters()).length).toBe(0);
  });

  it('keeps log order across JSON, Avro and Protobuf values on one partition', async () => {
    const topic = h.config.topics.telemetry;
    const inst = 9210;
    const ids = {
      avro: await libraryId('avro', 'BatteryState', `${topic}-avro-BatteryState`),
      protobuf: await libraryId('protobuf', 'BatteryState', `${topic}-protobuf-BatteryState`),
    };
    // One key: one partition. Each event overwrites soe; the last in the log wins.
    const order = ['json', 'avro', 'json', 'protobuf', 'avro', 'json', 'avro'] as const;
    for (const [i, format] of order.entries()) {
      const event = battery(inst, 1, now - 10_000 + i * 100, { soe: 10 + i });
      const value =
        format === 'json'
          ? JSON.stringify(event)
          : await encodeWithLibrary(format, event, ids[format]);
      await h.send(topic, String(inst), value);
    }
    const last = 10 + order.length - 1;
    const device = await until('the last event applied', async () => {
      const d = (await devicesOf(h, inst))[`battery:${inst * 10 + 1}`];
      return d?.soe === last ? d : undefined;
    });
    expect(device.lastSeenDate).toBe(
      iso(now - 10_000 + (order.length - 1) * 100).replace(/\.\d+Z$/, '+00:00'),
    );
    await h.settled();
    expect(await h.metric('ingest_events_applied_total', { topic })).toBeGreaterThanOrEqual(
      order.length,
    );
  });

  it('reads a schema evolved by a new optional field without a restart; refuses an incompatible one', async () => {
    const topic = h.config.topics.telemetry;
    const subject = `${topic}-avro-evolving-BatteryState`;
    const admin = createRegistryAdmin(registry.url);
    const v1 = schemaText('avro', 'BatteryState');
    await admin.setCompatibility(subject, 'BACKWARD');
    const v1Id = await admin.register(subject, 'AVRO', v1);
    const inst = 9220;
    const first = battery(inst, 1, now - 3_000, { soe: 20 });
    await h.send(topic, String(inst), await encodeWithLibrary('avro', first, v1Id));
    await until('v1 applied', async () => (await devicesOf(h, inst))[`battery:${inst * 10 + 1}`]);

    // v2: a new optional top-level field and a new optional state field, both defaulting to null.
    const schema = JSON.parse(v1) as { fields: Array<Record<string, unknown>> };
    const stateField = schema.fields.find((f) => f.name === 'state') as {
      type: { fields: Array<Record<string, unknown>> };
    };
    stateField.type.fields.push({
      name: 'cellBalancing',
      type: ['null', 'boolean'],
      default: null,
    });
    schema.fields.push({ name: 'gatewaySoftware', type: ['null', 'string'], default: null });
    const v2Id = await admin.register(subject, 'AVRO', JSON.stringify(schema));
    expect(v2Id).not.toBe(v1Id);
    const v2Type = (await import('avsc')).default.Type.forSchema(schema as never);
    const second = { ...toRegistryForm(battery(inst, 1, now - 2_000, { soe: 30 }), 'avro') };
    (second.state as Record<string, unknown>).cellBalancing = true;
    second.gatewaySoftware = '1.2.3';
    await h.send(topic, String(inst), frame(v2Id, v2Type.toBuffer(second)));
    const device = await until('v2 applied', async () => {
      const d = (await devicesOf(h, inst))[`battery:${inst * 10 + 1}`];
      return d?.soe === 30 ? d : undefined;
    });
    // The field this service does not know is dropped, as a JSON producer's unknown key.
    expect(device).not.toHaveProperty('cellBalancing');

    // Incompatible: deviceId becomes a string. The registry refuses it under BACKWARD.
    const broken = JSON.parse(v1) as { fields: Array<Record<string, unknown>> };
    (broken.fields.find((f) => f.name === 'deviceId') as Record<string, unknown>).type = 'string';
    const refused = await admin
      .register(subject, 'AVRO', JSON.stringify(broken))
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(RegistryRequestError);
    expect((refused as RegistryRequestError).status).toBe(409);
  });

  it('dead-letters an unknown schema id and bytes that do not decode, each with its reason', async () => {
    const topic = h.config.topics.telemetry;
    const inst = 9230;
    const id = await libraryId('avro', 'BatteryState', `${topic}-avro-BatteryState`);
    const good = await encodeWithLibrary('avro', battery(inst, 1, now - 1_000, { soe: 50 }), id);
    await h.send(topic, String(inst), frame(987_654, Uint8Array.of(2, 4, 6)));
    await h.send(topic, String(inst), good.subarray(0, good.length - 8));
    await h.send(topic, String(inst), good);
    await until(
      'the good one applied',
      async () => (await devicesOf(h, inst))[`battery:${inst * 10 + 1}`],
    );
    const dead = await until('both dead-lettered', async () => {
      const found = (await h.deadLetters()).filter((m) => m.key?.toString() === String(inst));
      return found.length >= 2 ? found : undefined;
    });
    expect(dead.map(reason).sort()).toEqual(['undecodable_value', 'unknown_schema_id']);
    expect(
      dead.find((m) => reason(m) === 'unknown_schema_id')?.headers['x-detail']?.toString(),
    ).toContain('987654');
    // The original bytes travel with the dead letter.
    expect(dead.find((m) => reason(m) === 'undecodable_value')?.value).toEqual(
      good.subarray(0, good.length - 8),
    );
  });

  it('keeps the access topic JSON only', async () => {
    const value = frame(1, Buffer.from('{}'));
    await h.send(h.config.topics.access, 'app:1', value);
    const [dead] = await until('the framed access value dead-lettered', async () => {
      const found = (await h.deadLetters()).filter((m) => m.key?.toString() === 'app:1');
      return found.length > 0 ? found : undefined;
    });
    expect(reason(dead as KafkaMessage)).toBe('invalid_json');
  });
});
