import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseInstallationsMessage, parseTelemetryMessage } from '../../src/domain/event-parse.js';
import {
  encodeEvent,
  REGISTRY_FORMATS,
  type RegistryFormat,
  schemaEntryOf,
} from '../../src/registry/event-encoder.js';
import {
  type RegisteredSchema,
  type RegistryClient,
  RegistryUnavailableError,
} from '../../src/registry/registry-client.js';
import {
  REGISTRY_SCHEMA_DIR,
  registrySchemaFiles,
  SCHEMA_TYPES,
} from '../../src/registry/schema-files.js';
import { createRegistryDecoder } from '../../src/registry/value-decoder.js';
import { encodeIndexes, frame, readIndexes } from '../../src/registry/wire-format.js';

// Registry-framed values decode to the JSON form of their event: the parser then gives exactly
// what it gives for the JSON value. The registry here is a map (the integration tests run the
// real one); ids are those the map hands out.

const at = '2024-03-01T10:00:00Z';
const installation = {
  id: 42,
  name: 'Home',
  type: 'commercial',
  address: 'Main St 1',
  postalCode: '12345',
  city: 'Berlin',
  country: 'DE',
  timezone: 'Europe/Berlin',
  latitude: null,
  longitude: 13.4,
  altitude: 34,
  creationDate: null,
};
const state = (category: string, s: Record<string, unknown>) => ({
  type: 'device.state',
  installationId: 42,
  category,
  deviceId: 1001,
  observedAt: at,
  state: s,
});
const INSTALLATION_EVENTS = [
  { type: 'installation.upserted', occurredAt: at, installation, companyId: null },
  { type: 'installation.upserted', occurredAt: at, installation, companyId: 7 },
  { type: 'installation.deleted', occurredAt: at, installationId: 42 },
];
const TELEMETRY_EVENTS = [
  // soe present, soh explicitly unknown, everything else absent.
  state('battery', { manufacturer: 'BYD ', soe: 55.5, soh: null, powerDc: -1200 }),
  state('inverter', { status: 4, powerAc: 0, isOffGrid: false, maxChargePower: 0 }),
  state('relay', { relayCount: 2, currentState: [true, false], desiredState: [null, true] }),
  state('boiler', { boilerMode: 'auto', operationMode: 'eco', loadState: 3, relayState: true }),
  state('evCharger', { mode: 'fast', supportsBiDirectionalCharging: false, status: null }),
  state('energyMeter', { options: 'grid', powerAc: 12.5 }),
  { type: 'device.removed', installationId: 42, category: 'relay', deviceId: 7, occurredAt: at },
];

function memoryRegistry(): RegistryClient & {
  register(format: RegistryFormat, event: object): number;
} {
  const schemas: RegisteredSchema[] = [];
  const files = registrySchemaFiles();
  return {
    register(format, event) {
      const entry = schemaEntryOf(event as Record<string, unknown>);
      const file = files.find((f) => f.entry === entry && f.format === format);
      if (!file) throw new Error('no file');
      schemas.push({ schemaType: SCHEMA_TYPES[format], schema: file.text });
      return schemas.length;
    },
    async schemaById(id) {
      return schemas[id - 1] ?? null;
    },
  };
}

async function decodedThenParsed(
  format: RegistryFormat,
  event: Record<string, unknown>,
  parse: (v: Parameters<typeof parseTelemetryMessage>[0]) => unknown,
) {
  const registry = memoryRegistry();
  const decoder = createRegistryDecoder(registry);
  const value = encodeEvent(event, format, registry.register(format, event));
  await decoder.load([value]);
  const decoded = decoder.decode(value);
  if (!decoded.ok) throw new Error(`${decoded.reason}: ${decoded.detail}`);
  return parse(decoded.value);
}

describe('registry-framed values', () => {
  for (const format of REGISTRY_FORMATS) {
    it(`${format}: every event parses exactly as its JSON form`, async () => {
      for (const event of INSTALLATION_EVENTS) {
        const expected = parseInstallationsMessage(JSON.stringify(event));
        expect(expected.ok).toBe(true);
        expect(await decodedThenParsed(format, event, parseInstallationsMessage)).toEqual(expected);
      }
      for (const event of TELEMETRY_EVENTS) {
        const expected = parseTelemetryMessage(JSON.stringify(event));
        expect(expected.ok).toBe(true);
        expect(await decodedThenParsed(format, event, parseTelemetryMessage)).toEqual(expected);
      }
    });
  }

  it('keeps an explicit null apart from an absent field in Avro and Protobuf', async () => {
    for (const format of ['avro', 'protobuf'] as const) {
      const parsed = (await decodedThenParsed(
        format,
        TELEMETRY_EVENTS[0] as Record<string, unknown>,
        parseTelemetryMessage,
      )) as { ok: true; event: { state: Record<string, unknown> } };
      expect(parsed.event.state).toEqual({
        manufacturer: 'BYD ',
        soe: 55.5,
        soh: null,
        powerDc: -1200,
      });
    }
  });

  it('dead-letters an unknown id and bytes that do not decode, each with its reason', async () => {
    const registry = memoryRegistry();
    const decoder = createRegistryDecoder(registry);
    const event = INSTALLATION_EVENTS[2] as Record<string, unknown>;
    const avroId = registry.register('avro', event);
    const protoId = registry.register('protobuf', event);
    const unknown = frame(99, Uint8Array.of(1, 2, 3));
    const truncated = encodeEvent(event, 'avro', avroId).subarray(0, 8);
    const badIndex = frame(protoId, Uint8Array.of(8, 1), [3]);
    const short = Uint8Array.of(0, 0, 1);
    await decoder.load([unknown, truncated, badIndex, short]);
    expect(decoder.decode(unknown)).toMatchObject({ ok: false, reason: 'unknown_schema_id' });
    expect(decoder.decode(truncated)).toMatchObject({ ok: false, reason: 'undecodable_value' });
    expect(decoder.decode(badIndex)).toMatchObject({
      ok: false,
      reason: 'undecodable_value',
      detail: expect.stringContaining('no message at index 3'),
    });
    expect(decoder.decode(short)).toMatchObject({ ok: false, reason: 'undecodable_value' });
  });

  it('throws a retriable error while the registry is unreachable, and decodes once it is back', async () => {
    const registry = memoryRegistry();
    const event = INSTALLATION_EVENTS[2] as Record<string, unknown>;
    const value = encodeEvent(event, 'avro', registry.register('avro', event));
    let down = true;
    const flaky: RegistryClient = {
      schemaById: (id) =>
        down ? Promise.reject(new RegistryUnavailableError('down')) : registry.schemaById(id),
    };
    const decoder = createRegistryDecoder(flaky);
    const error = await decoder.load([value]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RegistryUnavailableError);
    expect((error as RegistryUnavailableError).retriable).toBe(true);
    down = false;
    await decoder.load([value]);
    expect(decoder.decode(value).ok).toBe(true);
    // Cached: the registry down again changes nothing for a known id.
    down = true;
    await decoder.load([value]);
    expect(decoder.decode(value).ok).toBe(true);
  });

  it('reads Protobuf message indexes as Confluent writes them', () => {
    expect([...encodeIndexes([0])]).toEqual([0]);
    expect(readIndexes(encodeIndexes([0]), 0)).toEqual({ indexes: [0], offset: 1 });
    expect(readIndexes(encodeIndexes([1, 2]), 0)).toEqual({ indexes: [1, 2], offset: 3 });
    expect(readIndexes(Uint8Array.of(0x02), 0)).toBeNull();
    // No indexes (@kafkajs/confluent-schema-registry): a field tag where they would be.
    expect(readIndexes(Uint8Array.of(0x0a, 0x01), 0)).toEqual({ indexes: [0], offset: 0 });
  });

  it('matches the schema files written to docs/schemas/registry', () => {
    for (const { path, text } of registrySchemaFiles()) {
      const url = new URL(`../../${REGISTRY_SCHEMA_DIR}/${path}`, import.meta.url);
      expect(readFileSync(url, 'utf8'), `${path}: run npx tsx infra/export-schemas.ts`).toBe(text);
    }
  });
});
