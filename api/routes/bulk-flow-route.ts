import type { FastifyInstance } from 'fastify';
import { authenticatedKeyHash } from '../auth/authenticate.js';
import { sendError } from '../errors/error-catalog.js';
import { etagOf } from '../http/etag.js';
import { flowLastUpdatedMs, lastUpdatedText } from '../http/last-modified.js';
import { type Representation, representationOf } from '../http/representation.js';
import { parseInstallationIds } from '../params/installation-ids.js';
import type { Access, FlowPart, StoredFlow } from '../read-model/api-reader.js';
import { currentFlowData } from '../read-model/flow-freshness.js';
import { answerBadParameters, answerBody } from './answers.js';
import { authenticatedRoute, type Params, type RouteContext } from './route-context.js';

// beyond.md §4: the current energy flow of up to 100 installations in one request. The reader
// answers near-cache hits from memory and reads each miss with the single endpoint's one-slot
// script, issued together (never a cross-slot command). Each `data` is the single endpoint's,
// expired-flow recompute included.
//
// The ETag is a hash over the parts' tags (each the tag of one `data`'s bytes, kept with the
// near-cache entry) and the ids: still a function of the body bytes alone (the body fixes the ids,
// each `data` and `notFound`, and they fix the tag), so the same body from any replica has the
// same tag, without hashing 100 bodies' worth of bytes per request.

export function registerBulkFlowRoute(app: FastifyInstance, ctx: RouteContext): void {
  app.route({
    method: ['GET', 'POST'],
    url: '/getInstallationsCurrentEnergyFlow',
    ...authenticatedRoute(ctx, 'INTERNAL_ERROR', async (request, reply) => {
      const keyHash = authenticatedKeyHash(request);
      const nowMs = ctx.clock();
      const parsed = parseInstallationIds(request.query as Params, request.body as Params);
      if (!parsed.ok) {
        return answerBadParameters(ctx, reply, keyHash, nowMs, parsed.error);
      }
      const reads = await ctx.reader.flows(keyHash, parsed.ids, nowMs);
      const rep = bulkFlowRepresentation(ctx, parsed.ids, reads, nowMs);
      if (rep === null) return sendError(reply, 'UNAUTHORIZED');
      return answerBody(ctx, request, reply, keyHash, rep);
    }),
  });
}

/** The part of one flow: kept with its near-cache entry unless the flow expired (time-bound). */
function flowPart(stored: StoredFlow, data: string): FlowPart {
  const memo = stored.devices === null ? stored.memo : null;
  if (memo?.flowPart) return memo.flowPart;
  const part = { tag: etagOf(data), updated: lastUpdatedText(data) };
  if (memo) memo.flowPart = part;
  return part;
}

/** Null when any read found the key not live (it may have ended during the request). */
function bulkFlowRepresentation(
  ctx: RouteContext,
  ids: readonly number[],
  reads: readonly Access<StoredFlow>[],
  nowMs: number,
): Representation | null {
  let flows = '';
  let notFound = '';
  let tags = '';
  let latest: string | null = null;
  for (let i = 0; i < ids.length; i++) {
    const read = reads[i] as Access<StoredFlow>;
    if (read.kind === 'unauthorized') return null;
    if (read.kind === 'absent') {
      notFound += notFound === '' ? `${ids[i]}` : `,${ids[i]}`;
      continue;
    }
    const data = currentFlowData(read.value, nowMs, ctx.onlineWindowSeconds);
    const part = flowPart(read.value, data);
    // Fixed-width date-times: the greatest text is the latest; parsed once, at the end.
    const updated = part.updated;
    if (updated !== null && (latest === null || updated > latest)) latest = updated;
    if (flows !== '') flows += ',';
    flows += `{"installationId":${ids[i]},"data":${data}}`;
    tags += `${ids[i]}${part.tag}`;
  }
  const json = `{"valid":true,"flows":[${flows}],"notFound":[${notFound}]}`;
  const tag = etagOf(`bulk-flow ${tags} notFound ${notFound}`);
  return representationOf(json, latest === null ? null : flowLastUpdatedMs(latest), tag);
}
