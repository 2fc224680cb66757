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
  return null;
}

/**
 * True when `Authorization` or `Api-Key` was sent more than once. Node keeps the first
 * `Authorization` and joins repeated `Api-Key`s, while a proxy in front may keep the last: two
 * parties would see two identities, so such a request has none (401). `rawHeaders` alternates
 * names and values as received.
 */
export function hasRepeatedCredential(rawHeaders: readonly string[]): boolean {
  let authorization = 0;
  let apiKey = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] as string;
    // Length first: most headers are neither, and this runs on every request. Then the two
    // spellings clients send, before a lower-casing copy.
    if (name.length === 13) {
      if (
        name === 'authorization' ||
        name === 'Authorization' ||
        name.toLowerCase() === 'authorization'
      )
        authorization++;
    } else if (name.length === 7) {
      if (name === 'api-key' || name === 'Api-Key' || name.toLowerCase() === 'api-key') apiKey++;
    }
  }
  return authorization > 1 || apiKey > 1;
}
