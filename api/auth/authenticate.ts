import type { IncomingHttpHeaders } from 'node:http';
import type {
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  HookHandlerDoneFunction,
} from 'fastify';
import { hashApiKey, isWellFormedApiKey } from '../../src/domain/access-rule.js';
import { sendError } from '../errors/error-catalog.js';
import { extractApiKey } from './credential.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Lookup hash of the request's well-formed key, set by `requireWellFormedKey`. */
    apiKeyHash: string | null;
  }
}

/** The lookup hash of the request's key, or null when none or a malformed one was sent. */
export function keyHashOf(headers: IncomingHttpHeaders): string | null {
  const key = extractApiKey(headers);
  // Format first: a malformed key never costs a lookup.
  return isWellFormedApiKey(key) ? hashApiKey(key) : null;
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
  const keyHash = keyHashOf(request.headers);
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
