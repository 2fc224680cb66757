import type { ServerResponse } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import type { ChangeSubscriber } from '../change-feed/change-subscriber.js';
import { errorBody } from '../errors/error-catalog.js';
import { energyFlowBody } from '../http/envelopes.js';
import { etagOf } from '../http/etag.js';
import type { NearCache } from '../near-cache/near-cache.js';
import type { FollowedFlow } from '../near-cache/snapshot.js';
import type { StreamEnd, StreamMetrics } from '../ops/stream-metrics.js';
import { type Access, UNAUTHORIZED } from '../reader/api-reader.js';
import { currentFlow } from '../reader/flow-freshness.js';
import type { KeyAccess } from '../reader/key-access.js';
import type { StreamOutcome, StreamPush, StreamTracer } from '../tracing/api-tracer.js';
import { flowEvent, KEEP_ALIVE, revokedEvent, SSE_HEADERS } from './sse.js';

// The open energy-flow streams of this process (beyond.md §5). Streams of one installation share
// its change-feed subscription; an announcement, a reconnection of the subscriber, a change of
// the key's or its application's status, the flow's validUntil and the key's expiry each make
// every concerned stream re-read (through the near-cache) and send the served body when its ETag
// changed, or `revoked` and close when the key may no longer read it. Re-reads of one stream
// never overlap: one that arrives while another runs is done once after it. Traced, an
// announcement that carries its write's traceparent makes the re-read and push that follow a
// span linked to that write (api/tracing/stream-tracing.ts), however many it was coalesced with.

export interface StreamTicket {
  /** Sends the headers and the first event (unless `lastEventId` is its ETag), then follows. */
  start(res: ServerResponse, first: FollowedFlow, lastEventId: string | null): void;
  /** The request ended before a stream started. */
  cancel(): void;
}

export interface FlowStreams {
  readonly open: number;
  /** Set by close(): the process is shutting down, no stream starts any more. */
  readonly closing: boolean;
  /**
   * The installation as the key may follow it now, through the near-cache: 401 for a refused
   * key, 404 for one whose application may not read it (or a missing installation).
   */
  read(keyHash: string, id: number, nowMs: number): Promise<Access<FollowedFlow>>;
  /**
   * Reserves a stream and holds the installation's channel; null over the bound. Read the
   * installation after the returned promise resolves: the subscription is then in place.
   * `release` is called once when the stream ends or the ticket is cancelled.
   */
  reserve(id: number, keyHash: string, release?: () => void): Promise<StreamTicket> | null;
  /** Ends every open stream and refuses new ones (the server's close waits for open ones). */
  close(): void;
}

interface Stream {
  readonly id: number;
  readonly keyHash: string;
  readonly res: ServerResponse;
  readonly release: (() => void) | undefined;
  lastTag: string | null;
  timer: NodeJS.Timeout | null;
  reading: boolean;
  again: boolean;
  closed: boolean;
  /** Traced: the traceparents of the writes announced since the last re-read began. */
  writes: string[] | null;
}

// setTimeout's longest delay; a later deadline is re-armed when it fires.
const MAX_DELAY_MS = 2 ** 31 - 1;
// A client that stopped reading: past this much unsent data its stream is closed.
const MAX_BUFFERED_BYTES = 1024 * 1024;
// Writes one push links to at most (the SDK keeps 128 links a span by default).
const MAX_WRITES = 128;

export function createFlowStreams(deps: {
  subscriber: ChangeSubscriber;
  /** Announces changes of keys' and applications' statuses: the streams concerned re-read. */
  access: KeyAccess;
  cache: NearCache;
  clock: () => number;
  onlineWindowSeconds: number;
  maxStreams: number;
  heartbeatMs: number;
  logger: FastifyBaseLogger;
  /** Opens and how streams end. */
  metrics: StreamMetrics;
  /** Spans of pushes caused by traced writes; absent, tracing is off. */
  tracer?: StreamTracer;
}): FlowStreams {
  const { tracer } = deps;
  const byInstallation = new Map<number, Set<Stream>>();
  let reserved = 0;
  let closing = false;

  deps.subscriber.on('change', (id, traceparent) => {
    for (const s of byInstallation.get(id) ?? []) refresh(s, traceparent);
  });
  deps.subscriber.on('resubscribed', () => {
    for (const group of byInstallation.values()) for (const s of group) refresh(s);
  });
  // A key's change concerns its streams; an application's (rare) or a lost channel, every one.
  deps.access.onChange((what) => {
    const keyHash = what.startsWith('k:') ? what.slice(2) : null;
    for (const group of byInstallation.values())
      for (const s of group) if (keyHash === null || s.keyHash === keyHash) refresh(s);
  });
  const heartbeat = setInterval(() => {
    for (const group of byInstallation.values()) for (const s of group) write(s, KEEP_ALIVE);
  }, deps.heartbeatMs);
  heartbeat.unref();

  /** Whether the chunk went out (not if the stream is closed, or closes for a slow reader). */
  function write(s: Stream, chunk: string): boolean {
    if (s.closed) return false;
    if (s.res.writableLength > MAX_BUFFERED_BYTES) {
      end(s, 'slow-reader');
      return false;
    }
    s.res.write(chunk);
    return true;
  }

  function end(s: Stream, reason: StreamEnd): void {
    if (s.closed) return;
    s.closed = true;
    deps.metrics.closed(reason);
    if (s.timer) clearTimeout(s.timer);
    const group = byInstallation.get(s.id);
    group?.delete(s);
    if (group?.size === 0) byInstallation.delete(s.id);
    reserved--;
    deps.subscriber.release(s.id);
    s.release?.();
    if (!s.res.writableEnded) s.res.end();
  }

  /** Sends what the read says; schedules the next time-based re-read. */
  function apply(s: Stream, result: Access<FollowedFlow>): StreamOutcome {
    if (s.closed) return 'closed';
    if (result.kind !== 'ok') {
      const code = result.kind === 'absent' ? 'DOESNT_EXIST' : 'UNAUTHORIZED';
      const sent = write(s, revokedEvent(errorBody(code)));
      end(s, 'revoked');
      return sent ? 'revoked' : 'closed';
    }
    const nowMs = deps.clock();
    const { keyExpiresAtMs } = result.value;
    const flow = currentFlow(result.value.flowAt(nowMs), nowMs, deps.onlineWindowSeconds);
    const body = energyFlowBody(s.id, flow.data);
    const tag = etagOf(body);
    let outcome: StreamOutcome = 'unchanged';
    if (tag !== s.lastTag) {
      s.lastTag = tag;
      outcome = write(s, flowEvent(tag, body)) ? 'sent' : 'closed';
    }
    // The flow changes by time alone after validUntil; the key stops at its expiry.
    let next = Number.POSITIVE_INFINITY;
    if (flow.validUntilMs > 0) next = flow.validUntilMs + 1;
    if (keyExpiresAtMs !== null) next = Math.min(next, keyExpiresAtMs);
    if (s.timer) clearTimeout(s.timer);
    s.timer = null;
    if (next !== Number.POSITIVE_INFINITY) {
      const delay = Math.min(MAX_DELAY_MS, Math.max(0, next - nowMs));
      s.timer = setTimeout(() => refresh(s), delay);
    }
    return outcome;
  }

  async function read(keyHash: string, id: number, nowMs: number) {
    const grant = await deps.access.resolve(keyHash, nowMs);
    if (grant === null) return UNAUTHORIZED;
    return deps.cache.read(grant, id, 'stream', nowMs);
  }

  /** `traceparent`: the announced write's, when it was traced (only given when tracing is on). */
  function refresh(s: Stream, traceparent?: string): void {
    if (s.closed) return;
    if (traceparent !== undefined) {
      if (s.writes === null) s.writes = [traceparent];
      else if (s.writes.length < MAX_WRITES) s.writes.push(traceparent);
    }
    if (s.reading) {
      s.again = true;
      return;
    }
    s.reading = true;
    let push: StreamPush | null = null;
    if (s.writes !== null && tracer !== undefined) {
      push = tracer.push(s.id, s.writes);
      s.writes = null;
    }
    const reading =
      push === null
        ? read(s.keyHash, s.id, deps.clock())
        : push.within(() => read(s.keyHash, s.id, deps.clock()));
    reading.then(
      (result) => {
        s.reading = false;
        const outcome = apply(s, result);
        push?.end(outcome);
        if (s.again && !s.closed) {
          s.again = false;
          refresh(s);
        }
      },
      (error: unknown) => {
        s.reading = false;
        push?.end('failed');
        // Redis failed: the client reconnects (EventSource does) and gets a fresh answer.
        deps.logger.warn({ err: { message: (error as Error).message } }, 'stream re-read failed');
        end(s, 'error');
      },
    );
  }

  return {
    get open() {
      return reserved;
    },
    get closing() {
      return closing;
    },
    read,
    reserve(id, keyHash, release) {
      if (closing || reserved >= deps.maxStreams) return null;
      reserved++;
      let settled = false;
      return deps.subscriber.hold(id).then(() => ({
        start(res, first, lastEventId) {
          if (settled) return;
          settled = true;
          const s: Stream = {
            id,
            keyHash,
            res,
            release,
            lastTag: lastEventId,
            timer: null,
            reading: false,
            again: false,
            closed: false,
            writes: null,
          };
          res.on('close', () => end(s, 'client'));
          deps.metrics.opened();
          res.writeHead(200, SSE_HEADERS);
          // A client resuming at the current ETag gets no event yet: it must see the answer.
          res.flushHeaders();
          let group = byInstallation.get(id);
          if (!group) {
            group = new Set();
            byInstallation.set(id, group);
          }
          group.add(s);
          apply(s, { kind: 'ok', value: first });
        },
        cancel() {
          if (settled) return;
          settled = true;
          reserved--;
          deps.subscriber.release(id);
          release?.();
        },
      }));
    },
    close() {
      closing = true;
      clearInterval(heartbeat);
      for (const group of [...byInstallation.values()])
        for (const s of [...group]) end(s, 'shutdown');
    },
  };
}
