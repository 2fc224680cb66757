import type { IncomingHttpHeaders } from 'node:http';
import { hashApiKey, isWellFormedApiKey } from '../../src/domain/access-rule.js';
import { extractApiKey } from './credential.js';

/** The lookup hash of the request's key, or null when none or a malformed one was sent. */
export function keyHashOf(headers: IncomingHttpHeaders): string | null {
  const key = extractApiKey(headers);
  // Format first: a malformed key never costs a lookup.
  return isWellFormedApiKey(key) ? hashApiKey(key) : null;
}
