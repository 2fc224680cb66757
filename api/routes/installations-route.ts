import type { FastifyInstance } from 'fastify';
import { keyHashOf } from '../auth/authenticate.js';
import { sendError } from '../errors/error-catalog.js';
import { installationsBody } from './envelopes.js';
import { guarded, type RouteContext } from './route-context.js';

export function registerInstallationsRoute(app: FastifyInstance, ctx: RouteContext): void {
  app.route({
    method: ['GET', 'POST'],
    url: '/getInstallations',
    handler: guarded('DATABASE_ERROR', async (request, reply) => {
      const keyHash = keyHashOf(request.headers);
      if (keyHash === null) return sendError(reply, 'UNAUTHORIZED');
      const result = await ctx.reader.installations(keyHash, ctx.clock());
      if (result.kind !== 'ok') return sendError(reply, 'UNAUTHORIZED');
      return reply.type('application/json').send(installationsBody(result.value));
    }),
  });
}
