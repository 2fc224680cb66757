import { readFileSync } from 'node:fs';
import { Parser } from '@asyncapi/parser';
import { describe, expect, it } from 'vitest';
import { deviceMovesTopic } from '../../consumers/kafka/topics.js';
import {
  asyncApiFileContent,
  buildAsyncApiDocument,
} from '../../infra/asyncapi/asyncapi-document.js';
import { inlineSchemaRefs } from '../../infra/asyncapi/breaking-changes.js';
import { loadConfig } from '../../src/config.js';
import {
  DEAD_LETTER_HEADERS,
  REJECT_REASONS,
  REPLAY_HEADERS,
  replayLogTopic,
} from '../../src/domain/dead-letter.js';
import { FLOW_DERIVATION } from '../../src/domain/energy-flow-derivation.js';
import {
  parseAccessMessage,
  parseInstallationsMessage,
  parseTelemetryMessage,
} from '../../src/domain/event-parse.js';
import { accessEventSchema, installationsEventSchema } from '../../src/domain/events.js';
import { MAX_MESSAGE_BYTES } from '../../src/domain/limits.js';
import { parseDeviceReleased } from '../../src/projection/device-released.js';

// The committed AsyncAPI document is valid, is what the code generates, and names every topic,
// header, reason and event type the code knows; its examples are accepted by the consumers.

const committedText = readFileSync(new URL('../../docs/asyncapi.json', import.meta.url), 'utf8');
const committed = JSON.parse(committedText) as Doc;
// biome-ignore lint/suspicious/noExplicitAny: walking a JSON document the tests also check by schema
type Doc = Record<string, any>;
const config = loadConfig({});

const messagesOf = (doc: Doc, channel: string): Doc => doc.channels[channel].messages;

describe('docs/asyncapi.json', () => {
  it('is a valid AsyncAPI 3 document for the parser', async () => {
    const { document, diagnostics } = await new Parser().parse(committedText);
    expect(diagnostics.filter((d) => d.severity === 0).map((d) => d.message)).toEqual([]);
    expect(document?.version()).toMatch(/^3\./);
    expect(document?.operations().all().length).toBeGreaterThanOrEqual(6);
  });

  it('is what the code generates (rebuild: npx tsx infra/asyncapi/export.ts)', () => {
    expect(committedText).toBe(asyncApiFileContent());
  });

  it('names every topic the service reads or writes, by the configured names', () => {
    const addresses = Object.values(committed.channels as Record<string, Doc>).map(
      (c) => c.address,
    );
    expect(addresses.sort()).toEqual(
      [
        config.topics.installations,
        config.topics.telemetry,
        config.topics.access,
        config.topics.deadletter,
        deviceMovesTopic(config.consumer.groupId),
        replayLogTopic(config.topics.deadletter),
      ].sort(),
    );
    const custom = buildAsyncApiDocument(
      loadConfig({ TOPIC_TELEMETRY: 'tele.v9', CONSUMER_GROUP: 'blue' }),
    ) as Doc;
    expect(custom.channels.deviceTelemetry.address).toBe('tele.v9');
    expect(custom.channels.deviceMoves.address).toBe('blue.device-moves');
  });

  it('names every dead-letter header and reason the consumers write', () => {
    const headers = messagesOf(committed, 'deadLetters').deadLetter.headers;
    expect(Object.keys(headers.properties).sort()).toEqual(
      [...Object.values(DEAD_LETTER_HEADERS), ...Object.values(REPLAY_HEADERS)].sort(),
    );
    expect(headers.required.sort()).toEqual(Object.values(DEAD_LETTER_HEADERS).sort());
    expect(headers.properties[DEAD_LETTER_HEADERS.reason].enum).toEqual([...REJECT_REASONS]);
    for (const reason of REJECT_REASONS)
      expect(headers.properties[DEAD_LETTER_HEADERS.reason].description).toContain(`\`${reason}\``);
  });

  it('has a message for every event type the consumers accept, with its payload schema', () => {
    const titles = (channel: string) =>
      Object.values(messagesOf(committed, channel)).map((m: Doc) => m.title);
    expect(titles('installations')).toEqual(
      expect.arrayContaining(installationsEventSchema.options.map((o) => o.shape.type.value)),
    );
    expect(titles('accessChanges')).toEqual(
      expect.arrayContaining(accessEventSchema.options.map((o) => o.shape.type.value)),
    );
    expect(titles('deviceTelemetry')).toEqual(['device.state', 'device.removed']);
    const state = messagesOf(inlineSchemaRefs(committed), 'deviceTelemetry').deviceState.payload;
    expect(state.oneOf.map((s: Doc) => s.properties.category.const).sort()).toEqual(
      ['battery', 'boiler', 'energyMeter', 'evCharger', 'inverter', 'relay'].sort(),
    );
  });

  it('gives examples every consumer accepts under their key', () => {
    const accepts: Record<string, (value: string | null, key: string) => boolean> = {
      installations: (v, k) => parseInstallationsMessage(v, k).ok,
      deviceTelemetry: (v) => parseTelemetryMessage(v).ok,
      accessChanges: (v, k) => parseAccessMessage(v, k).ok,
      deviceMoves: (v) => parseDeviceReleased(v === null ? null : Buffer.from(v)) !== null,
    };
    let checked = 0;
    for (const [channel, accept] of Object.entries(accepts)) {
      for (const message of Object.values(messagesOf(committed, channel)) as Doc[]) {
        for (const example of message.examples) {
          const key = /key `([^`]+)`/.exec(example.summary)?.[1] ?? '';
          const value = example.payload === null ? null : JSON.stringify(example.payload);
          expect(accept(value, key), `${channel} ${message.name}`).toBe(true);
          expect(key).toMatch(new RegExp(message.bindings.kafka.key.pattern));
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(15);
  });

  it("states each input topic's maximum value size, as src/domain/limits.ts has it", () => {
    const channels = {
      installations: 'installations',
      deviceTelemetry: 'telemetry',
      accessChanges: 'access',
    } as const;
    for (const [channel, topic] of Object.entries(channels)) {
      const bytes = MAX_MESSAGE_BYTES[topic];
      expect(committed.channels[channel].description).toContain(
        `${bytes.toLocaleString('en')} bytes (${bytes / 1024} KiB`,
      );
      for (const message of Object.values(messagesOf(committed, channel)) as Doc[]) {
        const tombstone = message.payload.$ref === '#/components/schemas/Tombstone';
        expect(message['x-max-value-bytes'], `${channel} ${message.name}`).toBe(
          tombstone ? undefined : bytes,
        );
      }
    }
    // The broker's limit is another number; the document does not claim it.
    expect(committedText).not.toContain('max.message.bytes');
  });

  it('gives a device.state example per category, its situation and flow in the summary', () => {
    const { examples } = messagesOf(committed, 'deviceTelemetry').deviceState;
    expect(examples.map((e: Doc) => e.payload.category).sort()).toEqual(
      ['battery', 'boiler', 'energyMeter', 'evCharger', 'inverter', 'relay'].sort(),
    );
    for (const example of examples)
      expect(example.summary).toMatch(/Energy flow of this device alone: /);
  });

  it('states how the energy flow is derived, on the telemetry channel', () => {
    const description = committed.channels.deviceTelemetry.description;
    for (const row of FLOW_DERIVATION) {
      for (const field of row.fields) expect(description).toContain(`\`${field}\``);
      expect(description).toContain(row.from);
    }
  });
});
