import {
  type FastifyBaseLogger,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';

// Fastify's own lines per request (`incoming request`, `request completed`) are logged at
// info, but it builds their objects (and reads the response time) for every request even when
// info is off, as with LOG_LEVEL=warn, how the API runs in production. Here they are built only
// when the logger writes info (its level as configured at start; the API never changes it).
// Warnings and errors Fastify logs go through unchanged. (A child logger made lazily instead
// of one per request was measured too: Fastify then checks the factory's logger on every
// request, which cost more than the child.)

type Logger = FastifyBaseLogger & { isLevelEnabled?(level: string): boolean };

/** Fastify's `logController`: its request lines only when `logger` writes info. */
export function requestLogController(logger: FastifyBaseLogger): LogController {
  const info = (logger as Logger).isLevelEnabled?.('info') !== false;
  return new (class extends LogController {
    override incomingRequest(request: FastifyRequest, reply: FastifyReply): void {
      if (info) super.incomingRequest(request, reply);
    }
    override requestCompleted(
      error: Error | null | undefined,
      request: FastifyRequest,
      reply: FastifyReply,
    ): void {
      if (info || error) super.requestCompleted(error, request, reply);
    }
  })();
}
