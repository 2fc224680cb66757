import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KafkaMessage } from '../../consumers/kafka/client.js';
import { REGISTRY_FORMATS } from '../../src/registry/event-encoder.js';
import { createRegistryAdmin, registerAll } from '../../src/registry/registry-admin.js';
import { registrySchemaFiles, SCHEMA_TYPES } from '../../src/registry/schema-files.js';
import { readIndexes, schemaIdOf } from '../../src/registry/wire-format.js';
import {
  type RegistryJavaProducer,
  startRegistryJavaProducer,
} from '../../tools/registry-java-producer.js';
import { type RegistryInstance, sharedRegistry } from '../support/registry.js';
import { kafkaBrokers, testKafkaClient, uniqueId, waitFor } from '../support/stack.js';
import {
  devicesOf,
  type Harness,
  installation,
  iso,
  startHarness,
} from './support/consumer-harness.js';

// Values from a Java producer serializing with Apicurio Registry's own Kafka serdes (3.x, from
// Maven Central; infra/registry-producer/) in the Confluent-compatible id mode, zstd batches:
// in each of Avro, Protobuf and JSON Schema, installation.upserted and device.state reach the
// read model exactly as their JSON form does, and the bytes on the topic are the Confluent
// frame whose id the registry's ccompat API resolves. The schemas are registered by our own
// tool's logic (registerAll, one subject per event type); the serdes only look them up. One
// consumer deployment per format, as register-schemas prescribes (one format per subject).

let registry: RegistryInstance;
let java: RegistryJavaProducer;
const now = Date.now();
const until = <T>(what: string, probe: () => Promise<T | undefined>) =>
  waitFor(what, probe, 30_000);

const upsert = (inst: number, name: string) => ({
  type: 'installation.upserted',
  occurredAt: iso(now - 5_000),
  installation: installation(inst, name),
  companyId: 77,
});
// A device (category, id) belongs to one installation: each installation has its own ids.
const batteryState = (inst: number) => ({
  type: 'device.state',
  installationId: inst,
  category: 'battery',
  deviceId: inst * 10 + 1,
  observedAt: iso(now - 1_000),
  // A 0 is a value, not an absent field: Protobuf's `optional` must survive.
  state: {
    manufacturer: ' BYD ',
    soe: 61.5,
    powerDc: -800,
    temperature: 0,
    soh: null,
    gatewayId: 5,
    minSoe: 10,
  },
});
const relayState = (inst: number) => ({
  type: 'device.state',
  installationId: inst,
  category: 'relay',
  deviceId: inst * 10 + 2,
  observedAt: iso(now - 1_000),
  // Arrays, one of nullable items: with the boiler's values, the schemas' least plain shapes.
  state: {
    manufacturer: 'Shelly',
    relayCount: 2,
    currentState: [true, false],
    desiredState: [true, null],
  },
});
const boilerState = (inst: number) => ({
  type: 'device.state',
  installationId: inst,
  category: 'boiler',
  deviceId: inst * 10 + 3,
  observedAt: iso(now - 1_000),
  // Device-reported values passed through: a string, a number, a boolean (a union, a oneof).
  state: {
    boilerMode: 'auto',
    operationMode: 'eco',
    deviceState: 3,
    loadState: true,
    powerAc: null,
  },
});

beforeAll(async () => {
  registry = sharedRegistry();
  // The first run resolves the serdes from Maven Central.
  java = await startRegistryJavaProducer(kafkaBrokers(), registry.url);
}, 300_000);
afterAll(async () => {
  await java?.close();
});

describe.each(REGISTRY_FORMATS)('%s values from the Apicurio serde', (format) => {
  let h: Harness;
  let ids: Map<string, { subject: string; id: number }>;
  const base = 9_300 + REGISTRY_FORMATS.indexOf(format) * 10;
  // Java-serialized events on `inst`, the same events as JSON on `twin`.
  const inst = base + 1;
  const twin = base + 2;

  beforeAll(async () => {
    h = await startHarness(`registry-java-${format}`, {
      env: { SCHEMA_REGISTRY_URL: registry.url },
    });
    ids = await registerAll(
      createRegistryAdmin(registry.url),
      registrySchemaFiles(),
      format,
      h.config.topics,
    );
  });
  afterAll(async () => {
    await h?.stop();
  });

  it('reach the read model exactly as their JSON form', async () => {
    const { installations, telemetry } = h.config.topics;
    java.send(format, installations, String(inst), upsert(inst, 'Site'));
    java.send(format, telemetry, String(inst), batteryState(inst));
    java.send(format, telemetry, String(inst), relayState(inst));
    java.send(format, telemetry, String(inst), boilerState(inst));
    const acked = await java.flush();
    expect(acked).toHaveLength(4);
    await h.send(installations, String(twin), upsert(twin, 'Site'));
    await h.send(telemetry, String(twin), batteryState(twin));
    await h.send(telemetry, String(twin), relayState(twin));
    await h.send(telemetry, String(twin), boilerState(twin));

    const stored = async (id: number) => {
      const devices = await devicesOf(h, id);
      const site = await h.redis.get(h.keys.installation(id));
      const battery = devices[`battery:${id * 10 + 1}`];
      const relay = devices[`relay:${id * 10 + 2}`];
      const boiler = devices[`boiler:${id * 10 + 3}`];
      if (!battery || !relay || !boiler || !site) return undefined;
      return {
        battery,
        relay,
        boiler,
        installation: JSON.parse(site) as Record<string, unknown>,
      };
    };
    const fromJava = await until(`the ${format} events applied`, () => stored(inst));
    const fromJson = await until('the JSON events applied', () => stored(twin));
    expect(fromJava.battery).toMatchObject({
      manufacturer: 'BYD',
      soe: 61.5,
      temperature: 0,
      soh: null,
    });
    expect(fromJava.relay).toMatchObject({
      currentState: [true, false],
      desiredState: [true, null],
    });
    expect(fromJava.boiler).toMatchObject({
      operationMode: 'eco',
      deviceState: 3,
      loadState: true,
    });
    // Field for field what the JSON form stored, but for the ids that tell the two apart.
    const withoutIds = (v: Record<string, unknown>) =>
      Object.fromEntries(
        Object.entries(v).filter(([k]) => !/^(id|installationId|deviceId)$/.test(k)),
      );
    expect(withoutIds(fromJava.battery)).toEqual(withoutIds(fromJson.battery));
    expect(withoutIds(fromJava.relay)).toEqual(withoutIds(fromJson.relay));
    expect(withoutIds(fromJava.boiler)).toEqual(withoutIds(fromJson.boiler));
    expect(withoutIds(fromJava.installation)).toEqual(withoutIds(fromJson.installation));
    expect(fromJava.installation).toMatchObject({ id: inst, name: 'Site' });
    await h.settled();
    expect(await h.deadLetters()).toHaveLength(0);
  });

  // The values the test above sent, read back from the topics.
  it('frame them as magic byte 0 and the 4-byte id the ccompat API resolves', async () => {
    const { installations, telemetry } = h.config.topics;
    const reader = testKafkaClient().createConsumer({
      groupId: uniqueId('registry-java-reader'),
      topics: [installations, telemetry],
      fromBeginning: true,
    });
    const read: KafkaMessage[] = [];
    await reader.start(async (batch) => {
      read.push(...batch.messages);
    });
    try {
      const values = await until('the Java values read back', async () => {
        const mine = read.filter((m) => m.key?.toString() === String(inst));
        return mine.length >= 4 ? mine : undefined;
      });
      const expected = {
        [installations]: ['InstallationUpserted'],
        [telemetry]: ['BatteryState', 'RelayState', 'BoilerState'],
      };
      for (const m of values) {
        const value = m.value as Buffer;
        expect(value[0]).toBe(0);
        const id = schemaIdOf(value);
        // The id the registry answered when our tool registered the subject's schema.
        const record = expected[m.topic]?.find((name) => ids.get(name)?.id === id);
        expect(record, `schema id ${id} on ${m.topic}`).toBeDefined();
        const response = await fetch(`${registry.url}/schemas/ids/${id}`);
        expect(response.status).toBe(200);
        const answer = (await response.json()) as { schema: string; schemaType?: string };
        // Confluent's API leaves schemaType out for Avro, its default.
        expect(answer.schemaType ?? 'AVRO').toBe(SCHEMA_TYPES[format]);
        const file = registrySchemaFiles().find(
          (f) => f.format === format && f.entry.name === record,
        );
        expect(answer.schema.trim()).toBe(file?.text.trim());
        // No Apicurio headers: the id travels in the value only.
        expect(Object.keys(m.headers)).toEqual([]);
        // Protobuf: the message indexes, [0]. Apicurio writes them in full (count 1, index 0:
        // the bytes 2 0) where Confluent's serializer shortens [0] to the byte 0; both read.
        if (format === 'protobuf') {
          expect([...value.subarray(5, 7)]).toEqual([2, 0]);
          expect(readIndexes(value, 5)).toEqual({ indexes: [0], offset: 7 });
        }
        if (format === 'json-schema') {
          // The JSON text itself after the header, no indexes.
          expect(JSON.parse(value.subarray(5).toString())).toHaveProperty('type');
        }
      }
    } finally {
      await reader.stop();
    }
  });
});
