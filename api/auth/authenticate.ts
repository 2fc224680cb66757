import type { IncomingHttpHeaders } from 'node:http';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify';
import { hashApiKey, isWellFormedApiKey } from '../../src/domain/access-rule.js';
import { sendError } from '../errors/error-catalog.js';
import { extractApiKey, hasRepeatedCredential } from './credential.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Lookup hash of the request's well-formed key, set by `requireWellFormedKey`. */
    apiKeyHash: string | null;
  }
}

// Recent keys and their hashes: pollers send the same key every few seconds, and a sha256 per
// request is a measurable share of a cached read. Keyed by the key itself (a collision of any
// cheaper function would hand one key another's identity). Bounded by count, oldest out, and
// emptied every few minutes, so a key no longer sent leaves memory within that time; the
// exposure this adds is stated in docs/security.md.
const MAX_REMEMBERED_KEYS = 10_000;
const FORGET_EVERY_MS = 5 * 60_000;
const keyHashes = new Map<string, string>();
let forgetTimer: NodeJS.Timeout | null = null;

/** The key's hash; null when malformed. Only well-formed keys are remembered, so a remembered
 * key needs no format check again (the pattern test cost ~1.2k instructions per request). */
function hashOf(key: string): string | null {
  const known = keyHashes.get(key);
  if (known !== undefined) return known;
  // Format first: a malformed key never costs a hash, nor a place among the remembered ones.
  if (!isWellFormedApiKey(key)) return null;
  const keyHash = hashApiKey(key);
  if (keyHashes.size >= MAX_REMEMBERED_KEYS)
    keyHashes.delete(keyHashes.keys().next().value as string);
  keyHashes.set(key, keyHash);
  if (forgetTimer === null) {
    forgetTimer = setInterval(() => keyHashes.clear(), FORGET_EVERY_MS);
    forgetTimer.unref();
  }
  return keyHash;
}

/** The lookup hash of the request's key, or null when none or a malformed one was sent. */
export function keyHashOf(headers: IncomingHttpHeaders): string | null {
  const key = extractApiKey(headers);
  return key === null ? null : hashOf(key);
}

export function decorateKeyHash(app: FastifyInstance): void {
  app.decorateRequest('apiKeyHash', null);
}

/**
 * onRequest hook: runs before the body is read, so a request without a well-formed key gets 401
 * whatever its body (semantics.md: auth before parameters). Liveness is not checked here: it
 * travels with the data in the handler's Redis read. Callback style: nothing here awaits, and a
 * promise per request is measurable on the hot path.
 */
export function requireWellFormedKey(
  request: FastifyRequest,
  reply: FastifyReply,
  done: HookHandlerDoneFunction,
): void {
  const keyHash = hasRepeatedCredential(request.raw.rawHeaders) ? null : keyHashOf(request.headers);
  // Answered here: Fastify skips the rest of the request when `done` is not called.
  if (keyHash === null) {
    sendError(reply, 'UNAUTHORIZED');
    return;
  }
  request.apiKeyHash = keyHash;
  done();
}

/** The hash `requireWellFormedKey` set; a route without that hook is a programming error. */
export function authenticatedKeyHash(request: FastifyRequest): string {
  if (request.apiKeyHash === null) throw new Error('route without the key hook');
  return request.apiKeyHash;
}
