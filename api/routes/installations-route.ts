import type { FastifyInstance } from 'fastify';
import { authenticatedKeyHash } from '../auth/authenticate.js';
import { sendError } from '../errors/error-catalog.js';
import { representationOf } from '../http/representation.js';
import { answerBody } from './answers.js';
import { installationsBody } from './envelopes.js';
import { authenticatedRoute, type RouteContext } from './route-context.js';

// The body and its ETag are kept with the key view cache's entry (api/read-model/key-view-cache.ts)
// while its generation stands; read uncached, they are built per request.

export function registerInstallationsRoute(app: FastifyInstance, ctx: RouteContext): void {
  app.route({
    method: ['GET', 'POST'],
    url: '/getInstallations',
    ...authenticatedRoute(ctx, 'DATABASE_ERROR', async (request, reply) => {
      const keyHash = authenticatedKeyHash(request);
      const result = await ctx.reader.installations(keyHash, ctx.clock());
      if (result.kind !== 'ok') return sendError(reply, 'UNAUTHORIZED');
      const { installations, memo } = result.value;
      // No Last-Modified: installation records carry no data age (beyond.md §2 names two).
      const representation = memo?.body ?? representationOf(installationsBody(installations), null);
      if (memo) memo.body = representation;
      return answerBody(ctx, request, reply, keyHash, representation);
    }),
  });
}
