// Bounds on valid input (docs/events.md, Limits): the largest value each input topic accepts and
// the longest string each field may hold. An event over them is dead-lettered with reason
// `exceeds_limits`, never stored or served. Generous to real data, small enough that one
// record, and so one response, stays a few KiB whatever a producer sends.

/** Longest string, in UTF-16 code units, per kind of field. */
export const MAX_STRING_LENGTH = {
  /** Codes and zone names: postal code, country, IANA time zone (the longest is 30). */
  code: 64,
  /** Names: installation name and city, manufacturer, model, version, serial number, modes. */
  name: 256,
  /** Free text: street address, vendor status strings. */
  text: 1024,
  /**
   * Date-times (occurredAt, observedAt, expiresAt, creationDate): `2024-03-01T10:00:00.123456789+01:00`,
   * nanoseconds (the finest precision clocks and libraries write, e.g. Go's RFC3339Nano) with
   * an `±hh:mm` offset, is 35. A length, not a digit count in the pattern: an over-long one is
   * then `exceeds_limits` like any other string, and every validator reads `maxLength`.
   */
  dateTime: 35,
} as const;

/**
 * Largest value, in bytes as read from the topic, per input topic. A device.state with every
 * field of its category at its longest string stays under 16 KiB; the rest is room for the keys a
 * producer adds (dropped, but read).
 */
export const MAX_MESSAGE_BYTES = {
  installations: 16 * 1024,
  telemetry: 64 * 1024,
  access: 16 * 1024,
} as const;
