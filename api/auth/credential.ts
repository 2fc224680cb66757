import type { IncomingHttpHeaders } from 'node:http';

// Which header carries the key (read-api.md Authentication 2-3, semantics.md "Requests"):
// `Authorization` counts only with the Bearer scheme (any case) and then wins over `Api-Key`,
// valid or not. Returns null when no credential was sent.

const BEARER = /^bearer(?:[ \t]+(.*))?$/i;

export function extractApiKey(headers: IncomingHttpHeaders): string | null {
  const authorization = headers.authorization;
  if (typeof authorization === 'string') {
    const match = BEARER.exec(authorization.trim());
    if (match) return (match[1] ?? '').trim();
  }
  const apiKey = headers['api-key'];
  if (typeof apiKey === 'string') return apiKey.trim();
  // Node joins repeated `api-key` headers with ", ": that never passes the format check.
  return null;
}
