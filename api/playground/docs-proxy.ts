import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { hasRepeatedCredential } from '../auth/credential.js';
import { sendError } from '../errors/error-catalog.js';
import { API_HEADERS } from '../http/response-headers.js';
import { SSE_HEADERS } from '../streams/sse.js';
import { createProxiedStreams } from './proxied-streams.js';
import { type ProxyTarget, proxyTarget, scalarUrlTarget } from './proxy-target.js';
import { createUpstreamPool } from './upstream-pool.js';

// Server-side proxy for the playground's try-it requests, in two forms: `{proxy}{base}/…` and
// Scalar's `{proxy}?scalar_url=…` (what Scalar sends when the document names an absolute
// server, i.e. with API_DOCS_UPSTREAM_URL). Forwards only to the configured
// upstream and only under the API base (proxy-target.ts), only the headers the API reads,
// never follows redirects; answers 404 for a path that leaves the API base, 401 for a repeated
// credential header (as the API does: forwarding one copy would undo that rule), 502 when the
// API is unreachable, redirects or answers neither JSON nor (for a stream) an event stream, 504
// on timeout. It holds nothing it does not relay: every other answer closes the upstream
// response at once, and a client gone closes it too. Streams are relayed while the client reads
// them, under the API's own stream caps and the proxy's (proxied-streams.ts), over a capped pool
// of its own (upstream-pool.ts). Keys pass through headers and are never logged.

export interface DocsProxyOptions {
  readonly prefix: string;
  readonly basePath: string;
  /** null: this server itself, at the address it listens on. */
  readonly upstreamUrl: string | null;
  readonly timeoutMs: number;
  readonly maxConnections: number;
  readonly maxStreams: number;
  readonly streamRefused: () => void;
}

const FORWARDED_HEADERS = ['api-key', 'authorization', 'content-type'] as const;
/** What the API's answers say that a try-it should show too (validators, limits). */
const RELAYED_HEADERS = ['etag', 'last-modified', 'retry-after', 'ratelimit', 'ratelimit-policy'];
/** A JSON answer is read whole to check it; past this it is not relayed (a try-it, not a bulk export). */
const MAX_JSON_BYTES = 32 * 1024 * 1024; // 32 MiB
/** One key's share of the proxy's streams. */
const STREAMS_PER_CREDENTIAL = 4;
/** Seconds: proxied streams end when their pages close them. */
const STREAMS_RETRY_AFTER = '5';

type Failure = 'BAD_GATEWAY' | 'GATEWAY_TIMEOUT';

function selfUrl(app: FastifyInstance): string {
  const address = app.server.address() as AddressInfo | null;
  if (!address) throw new Error('not listening');
  const host =
    address.address === '::' || address.address === '0.0.0.0' ? '127.0.0.1' : address.address;
  return `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`;
}

export function registerDocsProxy(app: FastifyInstance, options: DocsProxyOptions): void {
  const pool = createUpstreamPool(options.maxConnections);
  const streams = createProxiedStreams({
    max: options.maxStreams,
    perCredential: STREAMS_PER_CREDENTIAL,
  });
  app.addHook('onClose', (_instance, done) => {
    pool.destroy();
    done();
  });
  const streamPrefix = `${options.basePath}/streams/`;
  app.register(async (scope) => {
    // The form body travels on as the bytes it came as.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) =>
      done(null, body),
    );
    const routePrefix = `${options.prefix}${options.basePath}`;
    const targetRules = () => ({
      basePath: options.basePath,
      upstreamOrigin: new URL(options.upstreamUrl ?? selfUrl(app)).origin,
    });
    // The path form, `{proxy}{base}/…`.
    scope.route({
      method: ['GET', 'POST'],
      url: `${routePrefix}/*`,
      handler: (request, reply) =>
        relay(request, reply, () =>
          proxyTarget({ ...targetRules(), requestUrl: request.url, routePrefix }),
        ),
    });
    // Scalar's form for an absolute server URL, `{proxy}?scalar_url=…` (playground.ts).
    scope.route({
      method: ['GET', 'POST'],
      url: options.prefix,
      handler: (request, reply) =>
        relay(request, reply, () =>
          scalarUrlTarget({ ...targetRules(), requestUrl: request.url, prefix: options.prefix }),
        ),
    });
  });

  async function relay(
    request: FastifyRequest,
    reply: FastifyReply,
    targetOf: () => ProxyTarget,
  ): Promise<FastifyReply> {
    if (hasRepeatedCredential(request.raw.rawHeaders)) {
      request.log.info({ reason: 'repeated credential' }, 'docs proxy: refused');
      return sendError(reply, 'UNAUTHORIZED');
    }
    const target = targetOf();
    if (!target.ok) {
      request.log.info({ reason: target.reason }, 'docs proxy: refused');
      return sendError(reply, target.reason === 'outside-base' ? 'NOT_FOUND' : 'BAD_REQUEST');
    }
    const headers: Record<string, string> = {};
    for (const name of FORWARDED_HEADERS) {
      const value = request.headers[name];
      if (typeof value === 'string') headers[name] = value;
    }
    // A stream's slot is taken before any upstream request, so a refusal costs nothing.
    const isStream = target.url.pathname.startsWith(streamPrefix) && request.method === 'GET';
    const release = isStream
      ? streams.take(headers['api-key'] ?? headers.authorization ?? '')
      : null;
    if (isStream && release === null) {
      request.log.info({ reason: 'proxied streams' }, 'docs proxy: refused');
      options.streamRefused();
      return sendError(reply.header('retry-after', STREAMS_RETRY_AFTER), 'TOO_MANY_STREAMS');
    }
    return forward(request, reply, target.url, headers, isStream, release ?? (() => undefined));
  }

  async function forward(
    request: FastifyRequest,
    reply: FastifyReply,
    url: URL,
    headers: Record<string, string>,
    isStream: boolean,
    release: () => void,
  ): Promise<FastifyReply> {
    const abort = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      abort.abort();
    }, options.timeoutMs);
    // A client gone before the answer is complete takes the upstream request with it.
    const clientGone = () => abort.abort();
    reply.raw.once('close', clientGone);
    const done = () => {
      clearTimeout(timer);
      reply.raw.off('close', clientGone);
      release();
    };
    const failed = (code: Failure) => {
      done();
      return sendError(reply, code);
    };
    const fail = (error: unknown) => {
      const code = timedOut ? 'GATEWAY_TIMEOUT' : 'BAD_GATEWAY';
      if (!abort.signal.aborted || timedOut) {
        request.log.warn({ code, reason: (error as Error).message }, 'docs proxy: upstream failed');
      }
      return failed(code);
    };
    let response: IncomingMessage;
    try {
      response = await send(
        url,
        request.method,
        headers,
        request.body as string | undefined,
        abort.signal,
      );
    } catch (error) {
      return fail(error);
    }
    const type = response.headers['content-type'] ?? '';
    if (request.method === 'HEAD') {
      response.destroy();
      if (isRedirect(response.statusCode)) return failed('BAD_GATEWAY');
      done();
      reply.code(response.statusCode ?? 502).headers(relayed(response.headers));
      return (type === '' ? reply : reply.type(type)).send();
    }
    if (isStream && response.statusCode === 200 && /^text\/event-stream\b/i.test(type)) {
      // Relayed for as long as the client reads; the slot is held until either side ends it.
      clearTimeout(timer);
      response.once('close', done);
      return reply.code(200).headers(SSE_HEADERS).send(response);
    }
    if (isRedirect(response.statusCode) || !/^application\/json\b/i.test(type)) {
      response.destroy();
      return failed('BAD_GATEWAY');
    }
    let text: string;
    try {
      text = await readBounded(response, MAX_JSON_BYTES);
      JSON.parse(text);
    } catch (error) {
      response.destroy();
      return fail(error);
    }
    done();
    return reply
      .code(response.statusCode ?? 502)
      .headers(relayed(response.headers))
      .type('application/json')
      .send(text);
  }

  function send(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal,
  ): Promise<IncomingMessage> {
    return new Promise((resolve, reject) => {
      const call = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const upstream = call(url, {
        method: method === 'POST' ? 'POST' : method === 'HEAD' ? 'HEAD' : 'GET',
        headers,
        agent: pool.agentFor(url),
        localAddress: pool.sourceFor(url),
        signal,
      });
      upstream.once('response', resolve);
      upstream.once('error', reject);
      upstream.end(method === 'POST' ? body : undefined);
    });
  }
}

const isRedirect = (status: number | undefined) =>
  status !== undefined && status >= 300 && status < 400;

function relayed(upstream: IncomingHttpHeaders): Record<string, string> {
  const headers: Record<string, string> = { ...API_HEADERS };
  for (const name of RELAYED_HEADERS) {
    const value = upstream[name];
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

async function readBounded(response: IncomingMessage, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of response) {
    bytes += (chunk as Buffer).length;
    if (bytes > maxBytes) throw new Error('answer over the proxy limit');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
