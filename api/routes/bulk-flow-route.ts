import type { FastifyInstance } from 'fastify';
import { authenticatedKeyHash } from '../auth/authenticate.js';
import { sendError } from '../errors/error-catalog.js';
import { etagOf } from '../http/etag.js';
import { flowLastUpdatedMs, httpDate, lastUpdatedText } from '../http/last-modified.js';
import { JSON_TEXT_TYPE, type Representation } from '../http/representation.js';
import { parseInstallationIds } from '../params/installation-ids.js';
import type { Access, FlowPart, StoredFlow } from '../reader/api-reader.js';
import { currentFlowData } from '../reader/flow-freshness.js';
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
// same tag, without hashing 100 bodies' worth of bytes per request. The body is joined from
// each part's UTF-8 bytes, also kept with the entry: a copy per request instead of a ~25 KB
// string built and encoded again.

// Answers kept by their `installationIds` text: a poller asking for the same installations
// again gets the body, ETag and Last-Modified built before, without joining or hashing them,
// when every id reads as it did then: absent again, or the very part its near-cache entry
// keeps (a change drops the entry, and the next entry keeps a new part). The answer is a
// function of those reads alone, so it is the one this request would build, whatever key asked
// first; missing and inaccessible ids are both "absent" here, as in the body. Bounded by count.
const ANSWERS_KEPT = 256;

interface KeptAnswer {
  /** Per id, in order: the part it was built from, null for an id in `notFound`. */
  readonly parts: ReadonlyArray<FlowPart | null>;
  readonly rep: Representation;
}

export function registerBulkFlowRoute(app: FastifyInstance, ctx: RouteContext): void {
  const kept = new Map<string, KeptAnswer>();
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
      const before = kept.get(parsed.text);
      if (before !== undefined && readsAsBefore(ctx, parsed.ids, reads, nowMs, before)) {
        return answerBody(ctx, request, reply, keyHash, before.rep);
      }
      const answer = bulkFlowAnswer(ctx, parsed.ids, reads, nowMs);
      if (answer === null) return sendError(reply, 'UNAUTHORIZED');
      if (answer.keepable) {
        if (before === undefined && kept.size >= ANSWERS_KEPT) {
          kept.delete(kept.keys().next().value as string);
        }
        kept.set(parsed.text, answer);
      }
      return answerBody(ctx, request, reply, keyHash, answer.rep);
    }),
  });
}

/**
 * The part of one flow: kept with its near-cache entry unless the flow expired (time-bound), so
 * a hit costs the request a copy of bytes encoded once, not a template and a UTF-8 encode.
 */
function flowPart(ctx: RouteContext, id: number, stored: StoredFlow, nowMs: number): FlowPart {
  const { memo } = stored;
  if (memo !== null && memo.flowPart !== null) return memo.flowPart;
  const data = currentFlowData(stored, nowMs, ctx.onlineWindowSeconds);
  const updated = lastUpdatedText(data);
  const updatedMs = updated === null ? null : flowLastUpdatedMs(data);
  const part = {
    json: Buffer.from(`{"installationId":${id},"data":${data}}`),
    tagged: `${id}${etagOf(data)}`,
    updated,
    updatedMs,
    updatedHttp: updatedMs === null ? null : httpDate(updatedMs),
  };
  if (memo !== null) memo.flowPart = part;
  return part;
}

const ascii = (text: string) => Buffer.from(text, 'latin1');
const FLOWS_OPEN = ascii('{"valid":true,"flows":[');
const COMMA = ascii(',');
const NOT_FOUND_OPEN = ascii('],"notFound":[');
const CLOSE = ascii(']}');

/** Whether each read gives what `before` was built from (never when the key is not live). */
function readsAsBefore(
  ctx: RouteContext,
  ids: readonly number[],
  reads: readonly Access<StoredFlow>[],
  nowMs: number,
  before: KeptAnswer,
): boolean {
  for (let i = 0; i < ids.length; i++) {
    const read = reads[i] as Access<StoredFlow>;
    if (read.kind === 'unauthorized') return false;
    const part = read.kind === 'absent' ? null : keptPart(ctx, ids[i] as number, read.value, nowMs);
    if (part !== before.parts[i]) return false;
  }
  return true;
}

/** The part the flow's near-cache entry keeps (built on first use); undefined when none. */
function keptPart(
  ctx: RouteContext,
  id: number,
  stored: StoredFlow,
  nowMs: number,
): FlowPart | undefined {
  return stored.memo === null ? undefined : flowPart(ctx, id, stored, nowMs);
}

/**
 * Null when any read found the key not live (it may have ended during the request).
 * `keepable`: every part is one its near-cache entry keeps, so the answer may be reused.
 */
function bulkFlowAnswer(
  ctx: RouteContext,
  ids: readonly number[],
  reads: readonly Access<StoredFlow>[],
  nowMs: number,
): (KeptAnswer & { readonly keepable: boolean }) | null {
  const parts: Array<FlowPart | null> = new Array(ids.length);
  let keepable = true;
  const chunks: Buffer[] = [FLOWS_OPEN];
  let length = FLOWS_OPEN.length + NOT_FOUND_OPEN.length + CLOSE.length;
  let notFound = '';
  let tags = '';
  let latest: FlowPart | null = null;
  for (let i = 0; i < ids.length; i++) {
    const read = reads[i] as Access<StoredFlow>;
    if (read.kind === 'unauthorized') return null;
    const id = ids[i] as number;
    if (read.kind === 'absent') {
      notFound += notFound === '' ? `${id}` : `,${id}`;
      parts[i] = null;
      continue;
    }
    const stored = read.value;
    if (stored.memo === null) keepable = false;
    const part = flowPart(ctx, id, stored, nowMs);
    parts[i] = part;
    // Fixed-width date-times: the greatest text is the latest.
    const updated = part.updated;
    if (updated !== null && (latest === null || updated > (latest.updated as string))) {
      latest = part;
    }
    if (chunks.length > 1) {
      chunks.push(COMMA);
      length += 1;
    }
    chunks.push(part.json);
    length += part.json.length;
    tags += part.tagged;
  }
  const notFoundBytes = ascii(notFound);
  chunks.push(NOT_FOUND_OPEN, notFoundBytes, CLOSE);
  const body = Buffer.concat(chunks, length + notFoundBytes.length);
  const tag = etagOf(`bulk-flow ${tags} notFound ${notFound}`);
  const rep = {
    body,
    // Built as text before its parts were kept as bytes: its Content-Type stays the text one.
    type: JSON_TEXT_TYPE,
    tag,
    lastModifiedMs: latest === null ? null : latest.updatedMs,
    lastModified: latest === null ? null : latest.updatedHttp,
  };
  return { parts, rep, keepable };
}
