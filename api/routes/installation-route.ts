import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticatedKeyHash } from '../auth/authenticate.js';
import { sendError } from '../errors/error-catalog.js';
import type { Representation } from '../http/representation.js';
import { parseInstallationId } from '../params/installation-id.js';
import type { Access, Read } from '../reader/api-reader.js';
import { answerBadParameters, answerBody, answerLiveError } from './answers.js';
import { authenticatedRoute, type Params, type RouteContext } from './route-context.js';

// The shape both per-installation endpoints share: auth, then `installationId`, then one read
// whose absent case (missing or inaccessible installation) is one 404 for both.

export interface InstallationRoute<T> {
  readonly url: string;
  read(ctx: RouteContext, keyHash: string, id: number, nowMs: number): Read<T>;
  /** The body with its ETag and Last-Modified (the latest date it contains). */
  representation(ctx: RouteContext, id: number, value: T, nowMs: number): Representation;
}

export function registerInstallationRoute<T>(
  app: FastifyInstance,
  ctx: RouteContext,
  route: InstallationRoute<T>,
): void {
  const answer = (
    request: FastifyRequest,
    reply: FastifyReply,
    keyHash: string,
    id: number,
    nowMs: number,
    result: Access<T>,
  ) => {
    if (result.kind === 'unauthorized') return sendError(reply, 'UNAUTHORIZED');
    if (result.kind === 'absent') return answerLiveError(ctx, reply, keyHash, 'DOESNT_EXIST');
    const rep = route.representation(ctx, id, result.value, nowMs);
    return answerBody(ctx, request, reply, keyHash, rep);
  };
  // Synchronous when the read is (a near-cache hit): no promise between request and answer.
  const handle = (request: FastifyRequest, reply: FastifyReply) => {
    const keyHash = authenticatedKeyHash(request);
    const nowMs = ctx.clock();
    const id = parseInstallationId(request.query as Params, request.body as Params);
    if (!id.ok) {
      return answerBadParameters(ctx, reply, keyHash, nowMs, id.error);
    }
    const result = route.read(ctx, keyHash, id.id, nowMs);
    if (result instanceof Promise) {
      return result.then((r) => answer(request, reply, keyHash, id.id, nowMs, r));
    }
    return answer(request, reply, keyHash, id.id, nowMs, result);
  };
  app.route({
    method: ['GET', 'POST'],
    url: route.url,
    ...authenticatedRoute(ctx, 'INTERNAL_ERROR', handle),
  });
}
