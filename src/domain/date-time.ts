// RFC 3339 date-times as the topics carry them, and the one format the API writes.

// The grammar (offset mandatory: a local time without one cannot be placed on the timeline):
//   YYYY-MM-DDTHH:MM:SS[.fraction](Z|+hh:mm|-hh:mm), digits ASCII.
// Read by hand, not by a regular expression: a match builds an array and a dozen substrings,
// and the consumers parse a date per event.

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

const ZERO = 48;
const DASH = 45;
const PLUS = 43;
const COLON = 58;
const DOT = 46;
const T = 84;
const Z = 90;

/** The decimal number of `width` ASCII digits at `at`; -1 when one is not a digit. */
function digits(text: string, at: number, width: number): number {
  let n = 0;
  for (let i = at; i < at + width; i++) {
    const d = text.charCodeAt(i) - ZERO; // NaN past the end: not a digit
    if (!(d >= 0 && d <= 9)) return -1;
    n = n * 10 + d;
  }
  return n;
}

function parseUncached(value: string): number | null {
  const year = digits(value, 0, 4);
  const month = digits(value, 5, 2);
  const day = digits(value, 8, 2);
  const hour = digits(value, 11, 2);
  const minute = digits(value, 14, 2);
  const second = digits(value, 17, 2);
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) return null;
  if (
    value.charCodeAt(4) !== DASH ||
    value.charCodeAt(7) !== DASH ||
    value.charCodeAt(10) !== T ||
    value.charCodeAt(13) !== COLON ||
    value.charCodeAt(16) !== COLON
  )
    return null;
  let i = 19;
  let ms = 0;
  if (value.charCodeAt(i) === DOT) {
    // Milliseconds from the first three digits; finer ones are truncated.
    const start = ++i;
    for (let d = digits(value, i, 1); d >= 0; d = digits(value, ++i, 1))
      if (i - start < 3) ms = ms * 10 + d;
    if (i === start) return null;
    for (let kept = i - start; kept < 3; kept++) ms *= 10;
  }
  const offsetMinutes = offsetAt(value, i);
  if (offsetMinutes === null) return null;
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  if (hour > 23 || minute > 59 || second > 59) return null;
  const local = daysFromCivil(year, month, day) * 86_400_000;
  const result = local + ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1000 + ms;
  // Keep within what formatDateTime can write back as a four-digit year.
  if (result < FIRST_MS || result > LAST_MS) return null;
  return result;
}

/**
 * Days from 1970-01-01 to a proleptic Gregorian date, years 0-9999 (H. Hinnant's
 * days_from_civil): arithmetic only, where a Date per parse would be garbage at once.
 */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra =
    yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146_097 + dayOfEra - 719_468;
}

/** The offset ending the text at `i` in minutes east of UTC; null when it is not one. */
function offsetAt(value: string, i: number): number | null {
  const sign = value.charCodeAt(i);
  if (sign === Z) return value.length === i + 1 ? 0 : null;
  if ((sign !== PLUS && sign !== DASH) || value.length !== i + 6) return null;
  const hours = digits(value, i + 1, 2);
  const minutes = digits(value, i + 4, 2);
  if (hours < 0 || minutes < 0 || value.charCodeAt(i + 3) !== COLON) return null;
  if (hours > 23 || minutes > 59) return null;
  return (sign === DASH ? -1 : 1) * (hours * 60 + minutes);
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
