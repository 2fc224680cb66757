import type { FastifyBaseLogger, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { isStoreUnavailable } from '../../src/read-model/store-errors.js';
import { requireWellFormedKey } from '../auth/authenticate.js';
import { type ErrorCode, sendError } from '../errors/error-catalog.js';
import { handleHttpError, isClientError } from '../http-errors.js';
import type { Quotas } from '../quotas/quota.js';
import type { ApiReader } from '../reader/api-reader.js';

/** What the read routes need, and nothing more. */
export interface RouteContext {
  readonly reader: ApiReader;
  readonly clock: () => number;
  readonly onlineWindowSeconds: number;
  /** Null when quotas are off (the default). */
  readonly quotas: Quotas | null;
}

type Handler = (
  request: FastifyRequest,
  reply: FastifyReply,
) => FastifyReply | Promise<FastifyReply>;

/**
 * Any failure below the handler (Redis unreachable, a script error, bad stored bytes) becomes
 * the endpoint's 500 code, never 401/404. Only the error's name and message are logged: an
 * ioredis error carries the command arguments.
 */
export function guarded(
  failure: ErrorCode,
  handler: Handler,
): (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply> | undefined {
  const fail = (request: FastifyRequest, reply: FastifyReply, error: unknown) => {
    logFailure(request.log, error);
    // Same status and code (semantics.md); the header tells clients when trying again helps.
    if (isStoreUnavailable(error)) reply.header('retry-after', STORE_RETRY_AFTER_SECONDS);
    return sendError(reply, failure);
  };
  return (request, reply) => {
    let result: FastifyReply | Promise<FastifyReply>;
    try {
      result = handler(request, reply);
    } catch (error) {
      fail(request, reply, error);
      return undefined;
    }
    if (result instanceof Promise) return result.catch((error) => fail(request, reply, error));
    // Answered in this turn: undefined tells Fastify so (a returned reply would be sent again).
    return undefined;
  };
}

// The API's Redis client reconnects within about 2 s (api/redis-client.ts).
const STORE_RETRY_AFTER_SECONDS = '1';

/**
 * Route options of an authenticated read: the key's format is checked before the body is read,
 * its liveness by the handler's read. A body Fastify refuses (415, 413, 400) is
 * explained only to a live key, at the cost of one lookup on that error path; any other key
 * gets the 401 it would get without a body.
 */
export function authenticatedRoute(
  ctx: RouteContext,
  failure: ErrorCode,
  handler: Handler,
): Pick<RouteOptions, 'onRequest' | 'errorHandler' | 'handler'> {
  return {
    onRequest: requireWellFormedKey,
    errorHandler: async (error, request, reply) => {
      const keyHash = request.apiKeyHash;
      if (keyHash !== null && isClientError(error)) {
        try {
          if (!(await ctx.reader.keyLive(keyHash, ctx.clock()))) {
            return sendError(reply, 'UNAUTHORIZED');
          }
        } catch (lookupError) {
          logFailure(request.log, lookupError);
          return sendError(reply, failure);
        }
      }
      return handleHttpError(error, request, reply);
    },
    handler: guarded(failure, handler),
  };
}

function logFailure(log: FastifyBaseLogger, error: unknown): void {
  const err = error instanceof Error ? { name: error.name, message: error.message } : { error };
  log.error({ err }, 'read failed');
}

export type Params = Record<string, unknown> | undefined;
