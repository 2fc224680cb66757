import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendError, type TransportErrorCode } from './errors/error-catalog.js';

// Answers outside the API's error table, in the same JSON envelope: unknown routes (404
// NOT_FOUND), a known route with another method (405 METHOD_NOT_ALLOWED; this includes CORS
// preflights, refused without any Access-Control-* header), unreadable bodies and URLs.
// Refusals below Fastify (unparsable HTTP, timeouts) are in edge/http-server.ts.

const BY_STATUS: Readonly<Record<number, TransportErrorCode>> = {
  400: 'BAD_REQUEST',
  408: 'REQUEST_TIMEOUT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
};

export function registerHttpErrors(app: FastifyInstance): void {
  const methodsByPath = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = methodsByPath.get(route.url) ?? new Set<string>();
    for (const m of [route.method].flat()) methods.add(m);
    methodsByPath.set(route.url, methods);
  });

  app.setNotFoundHandler((request, reply) => {
    // A fragment is no part of the path (a client should not send one; some do).
    const path = request.url.split(/[?#]/, 1)[0] ?? '';
    const methods = methodsByPath.get(path);
    if (methods) {
      reply.header('allow', [...methods].sort().join(', '));
      return sendError(reply, 'METHOD_NOT_ALLOWED');
    }
    return sendError(reply, 'NOT_FOUND');
  });

  app.setErrorHandler(handleHttpError);
}

/** A 4xx Fastify raised itself (unreadable, oversized or unsupported body), not a handler. */
export function isClientError(error: unknown): boolean {
  const status = (error as { statusCode?: number }).statusCode ?? 500;
  return status >= 400 && status < 500;
}

export function handleHttpError(
  error: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
): FastifyReply {
  if (isClientError(error)) {
    const status = (error as { statusCode: number }).statusCode;
    return sendError(reply, BY_STATUS[status] ?? 'BAD_REQUEST');
  }
  const { name, message } =
    error instanceof Error ? error : { name: 'Error', message: String(error) };
  // A streamed answer whose client left before its headers: nothing failed on this side.
  if ((error as { code?: string }).code === 'ERR_STREAM_PREMATURE_CLOSE') {
    request.log.info({ err: { name, message } }, 'client closed the stream');
  } else request.log.error({ err: { name, message } }, 'unhandled error');
  return sendError(reply, 'INTERNAL_ERROR');
}

/**
 * Fastify's own refusals before routing: a URL that is not valid percent-encoding, a path
 * parameter over the router's length limit. Its default answer echoes the URL, query included.
 * No route hook runs for these, so they are logged and counted like the Node server's.
 */
export function createFrameworkErrorHandler(
  refused: (code: TransportErrorCode, reason: string) => void,
) {
  return (error: { code?: string }, _request: FastifyRequest, reply: FastifyReply): void => {
    const code = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'URI_TOO_LONG' : 'BAD_REQUEST';
    refused(code, error.code ?? 'framework error');
    sendError(reply, code);
  };
}
