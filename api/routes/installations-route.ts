import { pipeline, Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticatedKeyHash } from '../auth/authenticate.js';
import { sendError } from '../errors/error-catalog.js';
import { chooseCoding, type StreamCoders } from '../http/compression.js';
import { namesAnyTag } from '../http/conditional.js';
import { installationsBody, installationsStream } from '../http/envelopes.js';
import { JSON_TYPE, representationOf } from '../http/representation.js';
import { API_HEADERS } from '../http/response-headers.js';
import { cursorAfter, MAX_PAGE_LIMIT, parsePage } from '../params/page.js';
import { NOT_MODIFIED_COST } from '../quotas/quota.js';
import type { StoredInstallation } from '../reader/api-reader.js';
import { answerBadParameters, answerBody, chargeStream } from './answers.js';
import { authenticatedRoute, type Params, type RouteContext } from './route-context.js';

// getInstallations (read-api.md, beyond.md §7). Without `limit` the whole list: when it fits in
// one page of MAX_PAGE_LIMIT it is answered as any read (ETag, 304, the view cache's memo);
// past that it is streamed a page at a time as it is read, so a key of a million installations
// costs the API one page of memory, and carries no ETag (a tag of bytes not yet read cannot
// head them). With `limit`, one page and its `nextCursor`.

export function registerInstallationsRoute(
  app: FastifyInstance,
  ctx: RouteContext,
  /** Coders of streamed lists, bounded per process (compression.ts). */
  coders: StreamCoders,
): void {
  app.route({
    method: ['GET', 'POST'],
    url: '/getInstallations',
    ...authenticatedRoute(ctx, 'DATABASE_ERROR', async (request, reply) => {
      const keyHash = authenticatedKeyHash(request);
      const nowMs = ctx.clock();
      const params = parsePage(request.query as Params, request.body as Params);
      if (!params.ok) return answerBadParameters(ctx, reply, keyHash, nowMs, params.error);
      const page = params.page ?? { afterId: null, limit: MAX_PAGE_LIMIT };
      const result = await ctx.reader.installations(keyHash, nowMs, page);
      if (result.kind !== 'ok') return sendError(reply, 'UNAUTHORIZED');
      const { installations, more, memo } = result.value;
      if (params.page === null && more) {
        return streamAll(ctx, coders, request, reply, keyHash, result.value.app, installations);
      }
      const last = installations[installations.length - 1];
      const next = params.page !== null && more && last ? cursorAfter(last.id) : null;
      // No Last-Modified: installation records carry no data age (beyond.md §2 names two).
      const representation =
        memo?.body ?? representationOf(installationsBody(installations, next), null);
      if (memo) memo.body = representation;
      return answerBody(ctx, request, reply, keyHash, representation);
    }),
  });
}

async function streamAll(
  ctx: RouteContext,
  coders: StreamCoders,
  request: FastifyRequest,
  reply: FastifyReply,
  keyHash: string,
  app: number,
  first: readonly StoredInstallation[],
): Promise<FastifyReply> {
  // `If-None-Match: *` holds for any list there is: 304, as a buffered answer would give, and
  // as there only to GET and HEAD (RFC 9110 §13.2.1; representation.ts): a POST gets the list.
  const ifNoneMatch = request.headers['if-none-match'];
  const safe = request.method === 'GET' || request.method === 'HEAD';
  if (safe && ifNoneMatch !== undefined && namesAnyTag(ifNoneMatch)) {
    const refused = await chargeStream(ctx, reply, keyHash, NOT_MODIFIED_COST);
    if (refused) return refused;
    return reply.code(304).headers(API_HEADERS).header('vary', 'Accept-Encoding').send();
  }
  const refused = await chargeStream(ctx, reply, keyHash);
  if (refused) return refused;
  const { reader } = ctx;
  // The key was judged once, before the first page: the list is one answer, as a single read is.
  async function* pages() {
    yield installationsStream.open;
    yield installationsStream.items(first, true);
    let last = first[first.length - 1] as StoredInstallation;
    for (;;) {
      const { installations, more } = await reader.viewPage(app, {
        afterId: last.id,
        limit: MAX_PAGE_LIMIT,
      });
      if (installations.length > 0) yield installationsStream.items(installations, false);
      if (!more || installations.length === 0) break;
      last = installations[installations.length - 1] as StoredInstallation;
    }
    yield installationsStream.close;
  }
  reply.headers(API_HEADERS).header('vary', 'Accept-Encoding').type(JSON_TYPE);
  const coding = chooseCoding(request.headers['accept-encoding']);
  // A HEAD gets the GET's head and nothing is read or coded for it: Fastify would read a body
  // stream to its end (and code it) only to drop it.
  if (request.method === 'HEAD') {
    if (coding !== null) reply.header('content-encoding', coding);
    return reply.send(Readable.from([]));
  }
  // A failure after the headers cannot become an error envelope: Fastify destroys the response
  // (pipeline carries a failed read to the coder), so the client sees an incomplete body, never
  // a complete-looking wrong one.
  const body = Readable.from(pages(), { objectMode: false });
  const coder = coding === null ? null : coders.take(coding);
  if (coding === null || coder === null) return reply.send(body);
  reply.header('content-encoding', coding);
  return reply.send(pipeline(body, coder, () => undefined));
}
