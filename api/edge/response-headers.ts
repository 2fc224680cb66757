import type { FastifyReply } from 'fastify';

// Headers every API answer carries (success and error alike). The key travels in a header, so
// no shared cache may store an answer (`private`), and a client revalidates before reuse
// (`no-cache`, as conditional reads expect). `nosniff`: a JSON body is never run as script or
// styles, whatever a browser guesses.
const CACHE_CONTROL = 'private, no-cache';
const NOSNIFF = 'nosniff';

/** For writers below Fastify (the edge's refusals, the ops listener). */
export const API_HEADERS = Object.freeze({
  'cache-control': CACHE_CONTROL,
  'x-content-type-options': NOSNIFF,
});

/** API_HEADERS on a reply, named one by one: Fastify's `headers()` lists an object's keys per call. */
export function withApiHeaders(reply: FastifyReply): FastifyReply {
  return reply.header('cache-control', CACHE_CONTROL).header('x-content-type-options', NOSNIFF);
}
