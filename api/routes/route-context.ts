import type { FastifyBaseLogger, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { requireWellFormedKey } from '../auth/authenticate.js';
import { type ErrorCode, sendError } from '../errors/error-catalog.js';
import { handleHttpError, isClientError } from '../http-errors.js';
import type { ApiReader } from '../read-model/api-reader.js';

/** What the three read routes need, and nothing more. */
export interface RouteContext {
  readonly reader: ApiReader;
  readonly clock: () => number;
  readonly onlineWindowSeconds: number;
}

type Handler = (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply>;

/**
 * Any failure below the handler (Redis unreachable, a script error, bad stored bytes) becomes
 * the endpoint's 500 code, never 401/404. Only the error's name and message are logged: an
 * ioredis error carries the command arguments.
 */
export function guarded(failure: ErrorCode, handler: Handler): Handler {
  return async (request, reply) => {
    try {
      return await handler(request, reply);
    } catch (error) {
      logFailure(request.log, error);
      return sendError(reply, failure);
    }
  };
}

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
