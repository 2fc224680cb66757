// What a rejected message carries to ingest-deadletter.v1: the names are a public contract
// (docs/events.md), so they live in one place.

export const DEAD_LETTER_HEADERS = {
  sourceTopic: 'x-source-topic',
  sourcePartition: 'x-source-partition',
  sourceOffset: 'x-source-offset',
  reason: 'x-reason',
  detail: 'x-detail',
} as const;

/** Machine-readable `x-reason` values. */
export const REJECT_REASONS = [
  'invalid_json', // not UTF-8 JSON, or not a JSON object
  'unknown_event_type', // `type` missing or not an event of this topic
  'schema_violation', // a field missing, of the wrong type or out of range
  'invalid_key', // a message key that does not name the event's fact, or a tombstone naming none
  'unexpected_tombstone', // a tombstone on a topic where it means nothing
  'future_observed_at', // observedAt beyond the allowed clock skew
  'missing_required_fields', // a device's first event lacks its non-nullable fields
  'processing_error', // projecting this one message failed; the rest of the batch goes on
  'too_large', // too large to forward with its headers: sent with headers only, no value
  'undecodable_batch', // an operator moved the group past a record batch no codec decodes (no value)
] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];
