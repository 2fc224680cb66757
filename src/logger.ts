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
  /** Fastify's matched route; its `url` is the route's pattern, absent when nothing matched. */
  readonly routeOptions?: { readonly url?: string };
}

/**
 * Replaces Fastify's `req` serializer: the matched route's pattern, never the path sent, since a
 * client may put a key anywhere in it (`?apiKey=…`, `;apiKey=…`, a path segment). A request no
 * route matched is logged as `unmatched` with its path's length.
 */
export function serializeRequest(req: LoggedRequest): Record<string, unknown> {
  const route = req.routeOptions?.url;
  return {
    method: req.method,
    url: route ?? 'unmatched',
    ...(route === undefined ? { pathLength: req.url?.split('?', 1)[0]?.length ?? 0 } : {}),
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
