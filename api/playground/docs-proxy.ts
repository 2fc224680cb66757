import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { hasRepeatedCredential } from '../auth/credential.js';
import { API_HEADERS } from '../edge/response-headers.js';
import { sendError } from '../errors/error-catalog.js';
import { proxyTarget } from './proxy-target.js';

// Server-side proxy for the playground's try-it requests. Forwards only to the configured
// upstream and only under the API base (proxy-target.ts), only the headers the API reads,
// never follows redirects; answers 404 for a path that leaves the API base, 401 for a repeated
// credential header (as the API does: forwarding one copy would undo that rule), 502 when the
// API is unreachable, redirects or answers non-JSON, 504 on timeout. Keys pass through headers
// and are never logged.

export interface DocsProxyOptions {
  readonly prefix: string;
  readonly basePath: string;
  /** null: this server itself, at the address it listens on. */
  readonly upstreamUrl: string | null;
  readonly timeoutMs: number;
}

const FORWARDED_HEADERS = ['api-key', 'authorization', 'content-type'] as const;

function selfUrl(app: FastifyInstance): string {
  const address = app.server.address() as AddressInfo | null;
  if (!address) throw new Error('not listening');
  const host =
    address.address === '::' || address.address === '0.0.0.0' ? '127.0.0.1' : address.address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}

export function registerDocsProxy(app: FastifyInstance, options: DocsProxyOptions): void {
  app.register(async (scope) => {
    // The form body travels on as the bytes it came as.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) =>
      done(null, body),
    );
    const routePrefix = `${options.prefix}${options.basePath}`;
    scope.route({
      method: ['GET', 'POST'],
      url: `${routePrefix}/*`,
      handler: async (request, reply) => {
        if (hasRepeatedCredential(request.raw.rawHeaders)) {
          request.log.info({ reason: 'repeated credential' }, 'docs proxy: refused');
          return sendError(reply, 'UNAUTHORIZED');
        }
        const upstream = new URL(options.upstreamUrl ?? selfUrl(app)).origin;
        const target = proxyTarget({
          requestUrl: request.url,
          routePrefix,
          basePath: options.basePath,
          upstreamOrigin: upstream,
        });
        if (!target.ok) {
          request.log.info({ reason: target.reason }, 'docs proxy: refused');
          return sendError(reply, target.reason === 'outside-base' ? 'NOT_FOUND' : 'BAD_REQUEST');
        }
        const headers: Record<string, string> = {};
        for (const name of FORWARDED_HEADERS) {
          const value = request.headers[name];
          if (typeof value === 'string') headers[name] = value;
        }
        let response: Response;
        try {
          response = await fetch(target.url, {
            // HEAD runs the GET handler; its answer loses the body on the way out.
            method: request.method === 'POST' ? 'POST' : 'GET',
            headers,
            body: request.method === 'POST' ? (request.body as string | undefined) : undefined,
            redirect: 'manual',
            signal: AbortSignal.timeout(options.timeoutMs),
          });
        } catch (error) {
          const code = failure(error);
          request.log.warn({ code }, 'docs proxy: upstream failed');
          return sendError(reply, code);
        }
        return relay(reply, response);
      },
    });
  });
}

const failure = (error: unknown) =>
  error instanceof Error && error.name === 'TimeoutError' ? 'GATEWAY_TIMEOUT' : 'BAD_GATEWAY';

async function relay(reply: FastifyReply, response: Response) {
  if (response.status >= 300 && response.status < 400) return sendError(reply, 'BAD_GATEWAY');
  if (!/^application\/json\b/i.test(response.headers.get('content-type') ?? '')) {
    return sendError(reply, 'BAD_GATEWAY');
  }
  let text: string;
  try {
    // The timeout signal also bounds reading the body.
    text = await response.text();
  } catch (error) {
    return sendError(reply, failure(error));
  }
  try {
    JSON.parse(text);
  } catch {
    return sendError(reply, 'BAD_GATEWAY');
  }
  return reply.code(response.status).headers(API_HEADERS).type('application/json').send(text);
}
