import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { forwardedClient } from '../../src/http/client-address.js';
import { authenticatedKeyHash } from '../auth/authenticate.js';
import { sendError } from '../errors/error-catalog.js';
import type { FollowedFlow } from '../near-cache/snapshot.js';
import type { StreamMetrics } from '../ops/stream-metrics.js';
import { parseInstallationId } from '../params/installation-id.js';
import type { Access } from '../reader/api-reader.js';
import type { FlowStreams } from '../streams/flow-streams.js';
import { SSE_HEADERS } from '../streams/sse.js';
import { type StreamLimits, sendStreamLimited } from '../streams/stream-limits.js';
import { authenticatedRoute, type Params, type RouteContext } from './route-context.js';

// GET {base}/streams/installationCurrentEnergyFlow?installationId=… (beyond.md §5): auth, then
// the parameter, then access, each answered as JSON exactly as the single endpoint answers it,
// before any stream starts; only a key that may read the installation gets a stream, so a stream
// never reveals what a 404 hides. The first event comes from a read made after the channel is
// held, so no change written after it goes unannounced.

export const FLOW_STREAM_URL = '/streams/installationCurrentEnergyFlow';

/** Seconds: another process (or this one, once a stream ends) may take the stream by then. */
const BUSY_RETRY_AFTER = '5';
const sendBusy = (reply: FastifyReply) =>
  sendError(reply.header('retry-after', BUSY_RETRY_AFTER), 'TOO_MANY_STREAMS');

/**
 * How a started stream is counted: once, when it ends (the onResponse hook leaves it alone),
 * with the time it took to start as its latency.
 */
export interface StreamCounting {
  readonly metrics: StreamMetrics;
  /** Requests whose answer is a stream, counted by `ended` instead of onResponse. */
  readonly streaming: WeakSet<FastifyRequest>;
  ended(request: FastifyRequest, seconds: number): void;
}

export function registerFlowStreamRoute(
  app: FastifyInstance,
  ctx: RouteContext,
  deps: {
    streams: FlowStreams;
    limits: StreamLimits;
    trustedProxies: ReadonlySet<string>;
    counting: StreamCounting;
  },
): void {
  const { metrics } = deps.counting;
  const refusal = (reply: FastifyReply, result: Access<FollowedFlow>) =>
    sendError(reply, result.kind === 'unauthorized' ? 'UNAUTHORIZED' : 'DOESNT_EXIST');

  const handle = async (request: FastifyRequest, reply: FastifyReply) => {
    const keyHash = authenticatedKeyHash(request);
    const nowMs = ctx.clock();
    const id = parseInstallationId(request.query as Params, undefined);
    if (!id.ok) {
      const live = await ctx.reader.keyLive(keyHash, nowMs);
      return sendError(reply, live ? id.error : 'UNAUTHORIZED');
    }
    // Access is decided first, by the read every refusal takes (near-cache/near-cache.ts): subscribing
    // before it would make a refusal cost more for an installation nobody here follows.
    const access = await deps.streams.read(keyHash, id.id, nowMs);
    if (access.kind !== 'ok') return refusal(reply, access);
    // HEAD: what GET would start with, without a stream.
    if (request.method === 'HEAD') return reply.code(200).headers(SSE_HEADERS).send();
    // Caps per key, application and client before the process-wide one (stream-limits.ts).
    const app = await deps.limits.applicationOf(keyHash);
    const client = forwardedClient(
      request.raw.socket.remoteAddress,
      request.headers['x-forwarded-for'],
      deps.trustedProxies,
    );
    const slot = deps.limits.take(keyHash, app, client);
    if (!slot.ok) {
      metrics.refused(slot.policy);
      return sendStreamLimited(reply, slot);
    }
    const reserved = deps.streams.reserve(id.id, keyHash, slot.release);
    if (reserved === null) {
      slot.release();
      metrics.refused('streams-max');
      return sendBusy(reply);
    }
    let ticket: Awaited<typeof reserved>;
    try {
      ticket = await reserved;
    } catch (error) {
      slot.release();
      throw error;
    }
    // Read again now that the channel is held: nothing written after this read goes unheard.
    let result: Access<FollowedFlow>;
    try {
      result = await deps.streams.read(keyHash, id.id, ctx.clock());
    } catch (error) {
      ticket.cancel();
      throw error;
    }
    if (result.kind !== 'ok') {
      ticket.cancel();
      return refusal(reply, result);
    }
    if (request.raw.destroyed || reply.raw.destroyed) {
      ticket.cancel();
      return reply;
    }
    // Shutting down since the reservation: a stream started now would hold the close open.
    if (deps.streams.closing) {
      ticket.cancel();
      metrics.refused('streams-max');
      return sendBusy(reply);
    }
    const lastEventId = request.headers['last-event-id'];
    deps.counting.streaming.add(request);
    // Its latency is the time to start it (a lifetime of hours would fill the top bucket).
    const startedIn = reply.elapsedTime / 1000;
    reply.raw.once('close', () => deps.counting.ended(request, startedIn));
    reply.hijack();
    ticket.start(reply.raw, result.value, typeof lastEventId === 'string' ? lastEventId : null);
    return reply;
  };
  app.route({
    method: 'GET',
    url: FLOW_STREAM_URL,
    ...authenticatedRoute(ctx, 'INTERNAL_ERROR', handle),
  });
}
