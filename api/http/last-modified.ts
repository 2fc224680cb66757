import { parseDateTime } from '../../src/domain/date-time.js';

// Data age without parsing the body: stored records and flows are JSON written with a fixed
// field order by the consumers, and every date-time has the same 25-character form
// (`2024-05-01T12:00:00+00:00`, src/domain/date-time.ts), so the latest one is the
// lexicographically greatest and is found by a byte search.

const LAST_SEEN = Buffer.from('"lastSeenDate":"', 'latin1');
const LAST_UPDATED = '"lastUpdated":"';
const DATE_LENGTH = 25;

/** The latest `lastSeenDate` over the values of a devices hash (flat field/value pairs), ms. */
export function latestLastSeenMs(pairs: readonly Buffer[]): number | null {
  let latest: string | null = null;
  for (let i = 1; i < pairs.length; i += 2) {
    const record = pairs[i] as Buffer;
    const at = record.indexOf(LAST_SEEN);
    if (at < 0) continue;
    const start = at + LAST_SEEN.length;
    const date = record.toString('latin1', start, start + DATE_LENGTH);
    if (latest === null || date > latest) latest = date;
  }
  return latest === null ? null : parseDateTime(latest);
}

/** The `"lastUpdated":"…"` member of flow data as text (with its key); null for `null`. */
export function lastUpdatedText(dataJson: string): string | null {
  const at = dataJson.lastIndexOf(LAST_UPDATED);
  return at < 0 ? null : dataJson.slice(at, at + LAST_UPDATED.length + DATE_LENGTH);
}

/** The flow data's `lastUpdated` (the latest lastSeenDate it counts), ms; null for `null`. */
export function flowLastUpdatedMs(dataJson: string): number | null {
  const text = lastUpdatedText(dataJson);
  return text === null ? null : parseDateTime(text.slice(LAST_UPDATED.length));
}

/** IMF-fixdate, as Last-Modified carries it. */
export function httpDate(ms: number): string {
  return new Date(ms).toUTCString();
}
