// RFC 3339 date-times as the topics carry them, and the one format the API writes.

// Offset is mandatory: a local time without offset cannot be placed on the timeline.
const RFC3339 =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:(Z)|([+-])(\d{2}):(\d{2}))$/;

// setUTCFullYear, not Date.UTC: Date.UTC maps years 0-99 to 1900-1999.
const FIRST_MS = new Date(0).setUTCFullYear(0, 0, 1);
const LAST_MS = new Date(0).setUTCFullYear(9999, 11, 31) + 86_399_999;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function daysInMonth(year: number, month: number): number {
  return month === 2 && isLeap(year) ? 29 : (DAYS_IN_MONTH[month - 1] ?? 0);
}

function isLeap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

/**
 * Parses an RFC 3339 date-time with offset (`Z` or `±hh:mm`) to epoch milliseconds.
 * Returns null for anything else, including impossible dates and times without offset.
 * Fractions beyond milliseconds are truncated.
 */
export function parseDateTime(value: string): number | null {
  // A gateway stamps every device of one report with the same observedAt, and the fold and
  // applyDeviceState both parse it: the last answer is reused (two variables, no object per miss).
  if (value === lastParsedText) return lastParsedMs;
  lastParsedMs = parseUncached(value);
  lastParsedText = value;
  return lastParsedMs;
}

let lastParsedText = '';
let lastParsedMs: number | null = null;

function parseUncached(value: string): number | null {
  const m = RFC3339.exec(value);
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, zulu, sign, oh, om] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  let offsetMinutes = 0;
  if (!zulu) {
    const offH = Number(oh);
    const offM = Number(om);
    if (offH > 23 || offM > 59) return null;
    offsetMinutes = (sign === '-' ? -1 : 1) * (offH * 60 + offM);
  }
  const ms = frac ? Number(frac.slice(0, 3).padEnd(3, '0')) : 0;
  const local = new Date(0).setUTCFullYear(year, month - 1, day);
  const result = local + ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1000 + ms;
  // Keep within what formatDateTime can write back as a four-digit year.
  if (result < FIRST_MS || result > LAST_MS) return null;
  return result;
}

let lastSecond = Number.NaN;
let lastFormatted = '';

/** Writes epoch ms as `YYYY-MM-DDTHH:MM:SS+00:00` (UTC, whole seconds, explicit offset). */
export function formatDateTime(ms: number): string {
  // Whole seconds: every event of a report's second gets the text made for the first one.
  const second = Math.floor(ms / 1000);
  if (second === lastSecond) return lastFormatted;
  if (!Number.isFinite(ms) || ms < FIRST_MS || ms > LAST_MS) {
    throw new RangeError(`date-time out of range: ${ms}`);
  }
  lastFormatted = `${new Date(second * 1000).toISOString().slice(0, 19)}+00:00`;
  lastSecond = second;
  return lastFormatted;
}
