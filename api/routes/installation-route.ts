import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { authenticatedKeyHash } from '../auth/authenticate.js';
import { sendError } from '../errors/error-catalog.js';
import { parseInstallationId } from '../params/installation-id.js';
import type { Access } from '../read-model/api-reader.js';
import { authenticatedRoute, type Params, type RouteContext } from './route-context.js';

// The shape both per-installation endpoints share: auth, then `installationId`, then one read
// whose absent case (missing or inaccessible installation) is one 404 for both.

export interface InstallationRead<T> {
  readonly url: string;
  read(ctx: RouteContext, keyHash: string, id: number, nowMs: number): Promise<Access<T>>;
  body(ctx: RouteContext, id: number, value: T, nowMs: number): string | Buffer;
}

export function registerInstallationRoute<T>(
  app: FastifyInstance,
  ctx: RouteContext,
  route: InstallationRead<T>,
): void {
  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    const keyHash = authenticatedKeyHash(request);
    const nowMs = ctx.clock();
    const id = parseInstallationId(request.query as Params, request.body as Params);
    if (!id.ok) {
      // Auth answers first: only a live key learns that its parameters are wrong.
      const live = await ctx.reader.keyLive(keyHash, nowMs);
      return sendError(reply, live ? id.error : 'UNAUTHORIZED');
    }
    const result = await route.read(ctx, keyHash, id.id, nowMs);
    if (result.kind === 'unauthorized') return sendError(reply, 'UNAUTHORIZED');
    if (result.kind === 'absent') return sendError(reply, 'DOESNT_EXIST');
    return reply.type('application/json').send(route.body(ctx, id.id, result.value, nowMs));
  };
  app.route({
    method: ['GET', 'POST'],
    url: route.url,
    ...authenticatedRoute(ctx, 'INTERNAL_ERROR', handle),
  });
}
