import { deviceMovesSpec, topicSpecs } from '../../consumers/kafka/topics.js';
import { type Config, loadConfig } from '../../src/config.js';
import {
  DEAD_LETTER_HEADERS,
  REJECT_REASON_MEANINGS,
  REJECT_REASONS,
  REPLAY_HEADERS,
  replayLogTopic,
} from '../../src/domain/dead-letter.js';
import {
  FLOW_DERIVATION_RULE,
  flowDerivationList,
} from '../../src/domain/energy-flow-derivation.js';
import { MAX_MESSAGE_BYTES } from '../../src/domain/limits.js';
import {
  ACCESS_MESSAGES,
  DEVICE_MOVES_MESSAGES,
  INSTALLATIONS_MESSAGES,
  type MessageSpec,
  payloadOf,
  TELEMETRY_MESSAGES,
} from './asyncapi-messages.js';
import { asyncApiSchemas } from './asyncapi-schemas.js';
import { registryBinding, registrySchemas } from './registry-schemas.js';

// The AsyncAPI 3 document of every topic the service reads or writes (docs/asyncapi.json),
// built from the code: topic names and cleanup policies from the consumers' topic specs, payloads
// from the zod schemas, headers and reasons from src/domain/dead-letter.ts.

/**
 * The contract's version. A change @asyncapi/diff calls breaking (a removed field, a narrowed
 * type, a renamed topic) needs a new major version: test/unit/asyncapi-diff.test.ts. 2.0.0: the
 * bounds of docs/events.md "Limits" (maximum string lengths, date-times' too), issue 54; the
 * topics are the same.
 */
export const ASYNCAPI_VERSION = '2.0.0';

type Json = Record<string, unknown>;
const BINDING = '0.5.0';

const replayHeaderSchemas: Json = {
  [REPLAY_HEADERS.replayOf]: {
    type: 'string',
    description:
      'Set only by the dead-letter tool on a replayed message: the dead letter it replays, `<topic>:<partition>:<offset>`',
  },
  [REPLAY_HEADERS.replayCount]: {
    type: 'string',
    pattern: '^[1-9][0-9]*$',
    description: 'Set only by the dead-letter tool: how often this message was replayed (decimal)',
  },
};

/**
 * The largest value a consumer reads, in bytes (src/domain/limits.ts): a specification
 * extension, not the Kafka binding's `max.message.bytes`, which is the broker's own limit and
 * another number (tools/create-topics.ts leaves it at the broker's default).
 */
const MAX_VALUE_BYTES_KEY = 'x-max-value-bytes';

function message(spec: MessageSpec, headers: Json | null, maxValueBytes?: number): Json {
  return {
    name: spec.name,
    title: spec.title,
    summary: spec.summary,
    contentType: 'application/json',
    ...(headers ? { headers } : {}),
    payload: payloadOf(spec),
    // A tombstone has no value to bound.
    ...(maxValueBytes !== undefined && spec.schema !== null
      ? { [MAX_VALUE_BYTES_KEY]: maxValueBytes }
      : {}),
    bindings: {
      kafka: {
        key: { type: 'string', description: spec.key.description, ...pattern(spec.key.pattern) },
        ...registryBinding(spec.registrySchemas),
        bindingVersion: BINDING,
      },
    },
    ...registrySchemas(spec.registrySchemas),
    examples: spec.examples.map((e, i) => ({
      name: e.name ?? `${spec.name}${i + 1}`,
      payload: e.payload,
      // Kafka keys are not headers; the example's key is named in its summary.
      summary: e.summary ? `${e.summary} Message key \`${e.key}\`.` : `message key \`${e.key}\``,
    })),
  };
}

const pattern = (p: string | undefined) => (p ? { pattern: p } : {});

/** Headers an input message may carry: none from producers; the replay marker from the tool. */
const inputHeaders: Json = {
  type: 'object',
  // Named, as every payload is: a generator makes one model of it, not one per message.
  title: 'InputHeaders',
  description:
    'Producers need send no headers. Headers are kept as they are when a message is dead-lettered.',
  properties: replayHeaderSchemas,
};

function channel(
  address: string,
  spec: { numPartitions: number; cleanupPolicy: string },
  description: string,
  messages: Json,
): Json {
  return {
    address,
    description,
    messages,
    bindings: {
      kafka: {
        topic: address,
        partitions: spec.numPartitions,
        topicConfiguration: { 'cleanup.policy': [spec.cleanupPolicy] },
        bindingVersion: BINDING,
      },
    },
  };
}

const messagesOf = (
  specs: readonly MessageSpec[],
  headers: Json | null,
  maxValueBytes?: number,
): Json => Object.fromEntries(specs.map((s) => [s.name, message(s, headers, maxValueBytes)]));

/** The size bound of an input topic, as its channel's description states it. */
const sizeLimit = (bytes: number) =>
  `A value over ${bytes.toLocaleString('en')} bytes (${bytes / 1024} KiB, as read from the topic) is dead-lettered with reason \`exceeds_limits\` before it is parsed (\`${MAX_VALUE_BYTES_KEY}\` of each message; docs/events.md "Limits").`;

const TELEMETRY_DESCRIPTION = [
  "Device state observations and removals, keyed by installation id: one installation's devices in one partition. Power in W, energy in Wh; null is unknown, never zero. Signs by category: an energy meter's powerAc is positive for export and negative for import; a battery's powerDc positive for charging; an inverter's powerAc positive when it supplies the AC side; EV charger and boiler powerAc positive for consumption. Worked examples: the deviceState message's examples, one per category, and docs/events.md \"Sign conventions and units\".",
  `The energy flow the API serves is derived from these fields, so a producer can check its own data against it. ${FLOW_DERIVATION_RULE}\n${flowDerivationList()}`,
  sizeLimit(MAX_MESSAGE_BYTES.telemetry),
].join('\n\n');

function deadLetterMessage(): Json {
  const h = DEAD_LETTER_HEADERS;
  const reasons = REJECT_REASONS.map((r) => `- \`${r}\`: ${REJECT_REASON_MEANINGS[r]}`);
  return {
    name: 'deadLetter',
    title: 'dead letter',
    summary: 'A message the consumers refused: its original key and value bytes, and why.',
    headers: {
      type: 'object',
      title: 'DeadLetterHeaders',
      description: "The rejected message's own headers are kept beside these (never over them).",
      required: [h.sourceTopic, h.sourcePartition, h.sourceOffset, h.reason, h.detail],
      properties: {
        [h.sourceTopic]: { type: 'string', description: 'the topic the message came from' },
        [h.sourcePartition]: { type: 'string', pattern: '^[0-9]+$', description: 'its partition' },
        [h.sourceOffset]: { type: 'string', pattern: '^[0-9]+$', description: 'its offset' },
        [h.reason]: {
          type: 'string',
          enum: [...REJECT_REASONS],
          description: `Machine-readable reason:\n${reasons.join('\n')}`,
        },
        [h.detail]: {
          type: 'string',
          maxLength: 500,
          description: 'human-readable detail, at most 500 bytes',
        },
        ...replayHeaderSchemas,
      },
    },
    payload: { $ref: '#/components/schemas/DeadLetterValue' },
    bindings: {
      kafka: {
        key: { type: 'string', description: 'the original message key (absent if it had none)' },
        bindingVersion: BINDING,
      },
    },
    examples: [
      {
        name: 'schemaViolation',
        headers: {
          [h.sourceTopic]: 'device-telemetry.v1',
          [h.sourcePartition]: '3',
          [h.sourceOffset]: '1842',
          [h.reason]: 'schema_violation',
          [h.detail]: 'state.soe: Invalid input: expected number, received string',
        },
        payload: {
          type: 'device.state',
          installationId: 42,
          category: 'battery',
          deviceId: 1001,
          observedAt: '2024-03-01T10:00:00Z',
          state: { soe: 'full' },
        },
      },
    ],
  };
}

function replayRecordMessage(): Json {
  const payload = { $ref: '#/components/schemas/ReplayRecord' };
  return {
    name: 'replayRecord',
    title: 'deadLetter.replayed',
    summary: 'The audit of one replay: which dead letter went back where, by whom, when.',
    contentType: 'application/json',
    payload,
    bindings: {
      kafka: {
        key: {
          type: 'string',
          description: 'where the replayed message was refused, `<topic>:<partition>:<offset>`',
        },
        bindingVersion: BINDING,
      },
    },
  };
}

const ref = (path: string) => ({ $ref: `#/${path}` });

function operation(action: 'send' | 'receive', channelId: string, channels: Json, summary: string) {
  const messages = Object.keys((channels[channelId] as { messages: Json }).messages);
  return {
    action,
    summary,
    channel: ref(`channels/${channelId}`),
    messages: messages.map((m) => ref(`channels/${channelId}/messages/${m}`)),
  };
}

/** The document for a configuration's topic names (the committed one: the defaults). */
export function buildAsyncApiDocument(config: Pick<Config, 'topics' | 'consumer'>): Json {
  const [installations, telemetry, accessSpec, deadletter] = topicSpecs(config.topics);
  if (!installations || !telemetry || !accessSpec || !deadletter) throw new Error('topic specs');
  const moves = deviceMovesSpec(config.consumer.groupId);
  const replays = replayLogTopic(config.topics.deadletter);
  const channels: Json = {
    installations: channel(
      installations.topic,
      installations,
      `Installation metadata and owning company, keyed by installation id (docs/events.md). ${sizeLimit(MAX_MESSAGE_BYTES.installations)}`,
      messagesOf(INSTALLATIONS_MESSAGES, inputHeaders, MAX_MESSAGE_BYTES.installations),
    ),
    deviceTelemetry: channel(
      telemetry.topic,
      telemetry,
      TELEMETRY_DESCRIPTION,
      messagesOf(TELEMETRY_MESSAGES, inputHeaders, MAX_MESSAGE_BYTES.telemetry),
    ),
    accessChanges: channel(
      accessSpec.topic,
      accessSpec,
      `Applications, API keys (by hash), grants and memberships, keyed by the fact's identity. ${sizeLimit(MAX_MESSAGE_BYTES.access)}`,
      messagesOf(ACCESS_MESSAGES, inputHeaders, MAX_MESSAGE_BYTES.access),
    ),
    deviceMoves: channel(
      moves.topic,
      moves,
      "Internal, one per read model (`<CONSUMER_GROUP>.device-moves`): written and read only by that group's consumers. Producers never write it; its events on the telemetry topic are dead-lettered.",
      messagesOf(DEVICE_MOVES_MESSAGES, null),
    ),
    deadLetters: channel(
      deadletter.topic,
      deadletter,
      'Every message the consumers refused, with its original key and bytes and the reason. Read and replayed with tools/dead-letters.ts.',
      { deadLetter: deadLetterMessage() },
    ),
    deadLetterReplays: channel(
      replays,
      { numPartitions: 1, cleanupPolicy: 'compact' },
      'The replay log of tools/dead-letters.ts: one record per message sent back (two dead letters of one message, after a consumer redelivery, are replayed once), written in the same Kafka transaction as the replay. It makes a replay idempotent and is its audit.',
      { replayRecord: replayRecordMessage() },
    ),
  };
  return {
    // 3.0.0, not 3.1.0: what Modelina 5 (and so `asyncapi generate models`) accepts.
    asyncapi: '3.0.0',
    info: {
      title: 'Installation telemetry read model: topics',
      version: ASYNCAPI_VERSION,
      description:
        'The Kafka topics the read-model service consumes and writes. Values are UTF-8 JSON objects, keys UTF-8 strings; any codec, transactions read committed. Prose: docs/events.md.',
    },
    defaultContentType: 'application/json',
    servers: {
      local: {
        host: '127.0.0.1:19092',
        protocol: 'kafka',
        description: "The project's local stack (npm run stack:start); elsewhere KAFKA_BROKERS.",
      },
    },
    channels,
    components: { schemas: asyncApiSchemas() },
    operations: {
      receiveInstallations: operation(
        'receive',
        'installations',
        channels,
        'Projected into the read model.',
      ),
      receiveDeviceTelemetry: operation(
        'receive',
        'deviceTelemetry',
        channels,
        'Projected into the read model.',
      ),
      receiveAccessChanges: operation(
        'receive',
        'accessChanges',
        channels,
        'Projected into the access records.',
      ),
      sendDeviceMoves: operation(
        'send',
        'deviceMoves',
        channels,
        'A telemetry owner hands a device over.',
      ),
      receiveDeviceMoves: operation(
        'receive',
        'deviceMoves',
        channels,
        "Applied by the installation's owner.",
      ),
      sendDeadLetters: operation(
        'send',
        'deadLetters',
        channels,
        'Every refused message, never dropped.',
      ),
      receiveDeadLetters: operation(
        'receive',
        'deadLetters',
        channels,
        'Listed and replayed by tools/dead-letters.ts.',
      ),
      sendReplayRecords: operation(
        'send',
        'deadLetterReplays',
        channels,
        'One per replayed dead letter.',
      ),
    },
  };
}

/** The committed file's content: the document for the default configuration. */
export function asyncApiFileContent(): string {
  return `${JSON.stringify(buildAsyncApiDocument(loadConfig({})), null, 2)}\n`;
}
