import type { FastifyReply, FastifyRequest } from 'fastify';
import { type ErrorCode, sendError } from '../errors/error-catalog.js';
import { negotiate, type Representation, sendNegotiated } from '../http/representation.js';
import { FULL_COST, NOT_MODIFIED_COST, type QuotaVerdict } from '../quotas/quota.js';
import type { RouteContext } from './route-context.js';

// How an authenticated read answers once the key is known live: the negotiated 200 or 304, or
// an error, each charged to the application's quota when quotas are on. A 401 is never charged
// and never carries RateLimit headers: it is not an authenticated request.

/** The 200 (or 304) of `rep`. Synchronous unless the quota must lease: no promise per answer. */
export function answerBody(
  ctx: RouteContext,
  request: FastifyRequest,
  reply: FastifyReply,
  keyHash: string,
  rep: Representation,
): FastifyReply | Promise<FastifyReply> {
  const negotiated = negotiate(request, rep);
  if (ctx.quotas === null) return sendNegotiated(reply, negotiated);
  const cost = negotiated.notModified ? NOT_MODIFIED_COST : FULL_COST;
  const charged = ctx.quotas.charge(keyHash, cost, ctx.clock());
  if (charged instanceof Promise) {
    return charged.then((verdict) => sendCharged(reply, verdict, negotiated));
  }
  return sendCharged(reply, charged, negotiated);
}

function sendCharged(
  reply: FastifyReply,
  verdict: QuotaVerdict,
  negotiated: ReturnType<typeof negotiate>,
): FastifyReply {
  if (!verdict.allowed) return rateLimited(reply, verdict);
  setRateLimitHeaders(reply, verdict);
  return sendNegotiated(reply, negotiated);
}

function setRateLimitHeaders(reply: FastifyReply, verdict: QuotaVerdict): void {
  reply.header('ratelimit-policy', verdict.policy).header('ratelimit', verdict.rateLimit);
}

/** Bad parameters: auth answers first, so only a live key learns that its parameters are wrong. */
export async function answerBadParameters(
  ctx: RouteContext,
  reply: FastifyReply,
  keyHash: string,
  nowMs: number,
  code: ErrorCode,
): Promise<FastifyReply> {
  return (await ctx.reader.keyLive(keyHash, nowMs))
    ? answerLiveError(ctx, reply, keyHash, code)
    : sendError(reply, 'UNAUTHORIZED');
}

/** An error answered to a live key (a bad parameter, a 404). */
export async function answerLiveError(
  ctx: RouteContext,
  reply: FastifyReply,
  keyHash: string,
  code: ErrorCode,
): Promise<FastifyReply> {
  if (ctx.quotas !== null) {
    const charged = ctx.quotas.charge(keyHash, FULL_COST, ctx.clock());
    const verdict = charged instanceof Promise ? await charged : charged;
    if (!verdict.allowed) return rateLimited(reply, verdict);
    setRateLimitHeaders(reply, verdict);
  }
  return sendError(reply, code);
}

function rateLimited(reply: FastifyReply, verdict: QuotaVerdict): FastifyReply {
  setRateLimitHeaders(reply, verdict);
  reply.header('retry-after', String(verdict.resetSeconds));
  return sendError(reply, 'RATE_LIMITED');
}

/**
 * Charges a streamed 200 (or the 304 answered instead of one) before it starts; the 429 to send
 * when over budget, else null.
 */
export async function chargeStream(
  ctx: RouteContext,
  reply: FastifyReply,
  keyHash: string,
  cost: number = FULL_COST,
): Promise<FastifyReply | null> {
  if (ctx.quotas === null) return null;
  const charged = ctx.quotas.charge(keyHash, cost, ctx.clock());
  const verdict = charged instanceof Promise ? await charged : charged;
  if (!verdict.allowed) return rateLimited(reply, verdict);
  setRateLimitHeaders(reply, verdict);
  return null;
}
