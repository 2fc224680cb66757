import type { FastifyInstance } from 'fastify';
import { authenticatedKeyHash } from '../auth/authenticate.js';
import { sendError } from '../errors/error-catalog.js';
import { installationsBody } from './envelopes.js';
import { authenticatedRoute, type RouteContext } from './route-context.js';

export function registerInstallationsRoute(app: FastifyInstance, ctx: RouteContext): void {
  app.route({
    method: ['GET', 'POST'],
    url: '/getInstallations',
    ...authenticatedRoute(ctx, 'DATABASE_ERROR', async (request, reply) => {
      const keyHash = authenticatedKeyHash(request);
      const result = await ctx.reader.installations(keyHash, ctx.clock());
      if (result.kind !== 'ok') return sendError(reply, 'UNAUTHORIZED');
      return reply.type('application/json').send(installationsBody(result.value));
    }),
  });
}
