import { type DestinationStream, type Logger, pino } from 'pino';

// Keys must never reach a log line, whichever header carried them.
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["api-key"]',
  'headers.authorization',
  'headers["api-key"]',
];

/** The parts of an HTTP request (Fastify's) that a request log line shows. */
interface LoggedRequest {
  readonly method?: string;
  readonly url?: string;
  readonly host?: string;
  readonly ip?: string;
  readonly socket?: { readonly remotePort?: number } | null;
}

/**
 * Replaces Fastify's `req` serializer: the path without its query string, since a client may
 * put a key there (`?apiKey=…`) and query values are not ours to log.
 */
export function serializeRequest(req: LoggedRequest): Record<string, unknown> {
  return {
    method: req.method,
    url: req.url?.split('?', 1)[0],
    host: req.host,
    remoteAddress: req.ip,
    remotePort: req.socket?.remotePort,
  };
}

export function createLogger(
  options: { level: string; name: string },
  destination?: DestinationStream,
): Logger {
  return pino(
    {
      name: options.name,
      level: options.level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      serializers: { req: serializeRequest },
    },
    destination,
  );
}
