import { z } from 'zod';
import { dateTimeSchema } from './schema-primitives.js';

// What a rejected message carries to ingest-deadletter.v1: the names are a public contract
// (docs/events.md, docs/asyncapi.json), so they live in one place.

export const DEAD_LETTER_HEADERS = {
  sourceTopic: 'x-source-topic',
  sourcePartition: 'x-source-partition',
  sourceOffset: 'x-source-offset',
  reason: 'x-reason',
  detail: 'x-detail',
} as const;

/**
 * What the dead-letter tool (tools/dead-letters.ts) adds to a message it sends back to its
 * source topic. The consumers keep both on a message they dead-letter again, so a replay that
 * fails again shows where it came from and how often it was tried.
 */
export const REPLAY_HEADERS = {
  /** The dead letter it replays: `<dead-letter topic>:<partition>:<offset>`. */
  replayOf: 'x-replay-of',
  /** 1 for the first replay; a dead letter of a replay carries it, the next replay adds one. */
  replayCount: 'x-replay-count',
} as const;

/** Machine-readable `x-reason` values, with the meaning docs/events.md gives them. */
export const REJECT_REASON_MEANINGS = {
  invalid_json: 'the value is not UTF-8, not JSON, or not a JSON object',
  unknown_event_type: '`type` is missing or not an event of this topic',
  schema_violation: 'a field is missing, has the wrong type or is out of range',
  exceeds_limits:
    "the value is larger than its topic's maximum message size, or a string field is longer than its maximum length (docs/events.md, Limits)",
  invalid_key: "the message key does not name the event's fact, or a tombstone's key names nothing",
  unexpected_tombstone: 'a tombstone on a topic where it means nothing (device-telemetry.v1)',
  future_observed_at: "`observedAt` (or a removal's `occurredAt`) beyond the allowed clock skew",
  missing_required_fields: "a device's first event lacks its category's required fields",
  processing_error:
    'projecting this one message failed unexpectedly; the rest of its batch went on',
  too_large:
    'the message with its headers exceeds 900 KiB: sent with these headers only, no value; x-detail names the original reason',
  undecodable_batch:
    'an operator moved a consumer group past a record batch no codec decodes: no key, no value',
  unknown_schema_id:
    'a registry-framed value (magic byte 0) names a schema id the schema registry does not know',
  undecodable_value:
    "a registry-framed value's bytes do not decode with the writer's schema (or the header, the Protobuf message indexes or the schema itself are unusable)",
} as const;

export type RejectReason = keyof typeof REJECT_REASON_MEANINGS;
export const REJECT_REASONS = Object.keys(REJECT_REASON_MEANINGS) as readonly RejectReason[];

/**
 * The replay log: one record per message the tool sent back, keyed by the message's source
 * coordinates (`topic:partition:offset` where it was refused), not by its dead letter's: a
 * consumer that redelivers a batch can dead-letter one message twice, and the message is
 * replayed once. It is what makes a replay idempotent and the audit of who replayed what; it
 * lives on Kafka beside the dead letters (compacted: one record per message, kept), not in
 * Redis, which is the disposable read model a rebuild empties.
 */
export const replayLogTopic = (deadLetterTopic: string): string => `${deadLetterTopic}.replays`;

/**
 * The one transactional id of every replay from `deadLetterTopic`, whoever runs it and with
 * whatever KAFKA_CLIENT_ID: starting a run fences any other still open on the same replay log.
 */
export const replayTransactionalId = (deadLetterTopic: string): string =>
  `${deadLetterTopic}.replayer`;

// A Kafka offset is a signed 64-bit integer: at most 19 decimal digits.
const offsetText = z.string().max(19).regex(/^\d+$/);
export const deadLetterCoordinatesSchema = z
  .object({
    topic: z
      .string()
      .min(1)
      .max(249)
      .meta({ description: 'The topic (Kafka allows 249 characters).' }),
    partition: z.number().int().min(0).meta({ description: 'The partition.' }),
    offset: offsetText.meta({ description: 'The offset, decimal (64-bit, hence a string).' }),
  })
  .meta({ description: 'Where a message is: topic, partition, offset.' });
const coordinates = deadLetterCoordinatesSchema;

export const replayRecordSchema = z
  .object({
    type: z.literal('deadLetter.replayed').meta({ description: 'Always `deadLetter.replayed`.' }),
    /** The dead letter sent back. */
    deadLetter: coordinates.meta({ description: 'The dead letter sent back.' }),
    /**
     * Where the message was refused; its replay went back to this topic. Also the record's key
     * (`topic:partition:offset`); the tool reads it from here, not from the key.
     */
    source: coordinates.meta({
      description:
        "Where the message was refused; its replay went back to this topic. Also the record's key.",
    }),
    reason: z.string().max(64).meta({ description: 'The x-reason of the dead letter replayed.' }),
    /** 1 for the first replay of this message, more when a replay was dead-lettered again. */
    replayCount: z.number().int().positive().meta({
      description:
        '1 for the first replay of this message, more when a replay was dead-lettered again.',
    }),
    /** The operating-system user who ran the tool, or --operator. */
    by: z
      .string()
      .min(1)
      .max(256)
      .meta({ description: 'The operating-system user who ran the tool, or --operator.' }),
    at: dateTimeSchema.meta({ description: 'When the replay was sent.' }),
    /** One id per tool run: the records of one run belong together. */
    run: z
      .string()
      .min(1)
      .max(256)
      .meta({ description: 'One id per tool run: the records of one run belong together.' }),
  })
  .meta({
    description: 'The audit of one replay: which dead letter went back where, by whom, when.',
  });
export type ReplayRecord = z.infer<typeof replayRecordSchema>;

export const deadLetterId = (c: { topic: string; partition: number; offset: string }): string =>
  `${c.topic}:${c.partition}:${c.offset}`;
