import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import { type ErrorCode, sendError } from '../errors/error-catalog.js';
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

function logFailure(log: FastifyBaseLogger, error: unknown): void {
  const err = error instanceof Error ? { name: error.name, message: error.message } : { error };
  log.error({ err }, 'read failed');
}

export type Params = Record<string, unknown> | undefined;
