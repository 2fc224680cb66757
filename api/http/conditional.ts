// Preconditions of RFC 9110 §13 for a GET or HEAD of a representation that exists.

/**
 * If-None-Match with the weak comparison RFC 9110 §13.1.2 asks for: `*`, or any listed tag
 * (with or without `W/`) equal to one of `tags`. Answers the tag that matched, else null.
 */
/** If-None-Match names `*`: any current representation matches (RFC 9110 §13.1.2). */
export function namesAnyTag(header: string): boolean {
  return header.split(',').some((tag) => tag.trim() === '*');
}

export function matchingTag(header: string, tags: readonly string[]): string | null {
  const value = header.trim();
  if (value === '*') return tags[0] ?? null;
  for (const raw of value.split(',')) {
    let tag = raw.trim();
    if (tag.startsWith('W/')) tag = tag.slice(2);
    if (tag === '*') return tags[0] ?? null;
    for (const candidate of tags) if (candidate === tag) return candidate;
  }
  return null;
}

/**
 * If-Modified-Since (RFC 9110 §13.1.3): true when the representation is no newer than the date,
 * at whole-second precision. An unparsable date, or one without a Last-Modified to compare,
 * makes the condition true (a 200), as the RFC says to ignore it.
 */
export function notModifiedSince(header: string, lastModifiedMs: number | null): boolean {
  if (lastModifiedMs === null) return false;
  const since = Date.parse(header);
  if (!Number.isFinite(since)) return false;
  return Math.floor(lastModifiedMs / 1000) * 1000 <= since;
}
