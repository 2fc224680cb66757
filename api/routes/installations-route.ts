import type { FastifyInstance } from 'fastify';
import { authenticatedKeyHash } from '../auth/authenticate.js';
import { sendError } from '../errors/error-catalog.js';
import { type Representation, representationOf } from '../http/representation.js';
import { answerBody } from './answers.js';
import { installationsBody } from './envelopes.js';
import { authenticatedRoute, type RouteContext } from './route-context.js';

// Each key's last answer is kept: the key view is read every time (it proves the key live),
// but when it holds the same bytes as last time the ETag is that answer's, found by a byte
// comparison instead of a hash. Bounded; a key pushed out is hashed again next time.
const MAX_REMEMBERED_KEYS = 10_000;

export function registerInstallationsRoute(app: FastifyInstance, ctx: RouteContext): void {
  const last = new Map<string, Representation>();
  const representation = (keyHash: string, body: Buffer): Representation => {
    const known = last.get(keyHash);
    if (known !== undefined && body.equals(known.body as Buffer)) return known;
    // No Last-Modified: installation records carry no data age (beyond.md §2 names two).
    const rep = representationOf(body, null);
    if (known === undefined && last.size >= MAX_REMEMBERED_KEYS) {
      last.delete(last.keys().next().value as string);
    }
    last.set(keyHash, rep);
    return rep;
  };
  app.route({
    method: ['GET', 'POST'],
    url: '/getInstallations',
    ...authenticatedRoute(ctx, 'DATABASE_ERROR', async (request, reply) => {
      const keyHash = authenticatedKeyHash(request);
      const result = await ctx.reader.installations(keyHash, ctx.clock());
      if (result.kind !== 'ok') return sendError(reply, 'UNAUTHORIZED');
      const body = installationsBody(result.value);
      return answerBody(ctx, request, reply, keyHash, representation(keyHash, body));
    }),
  });
}
