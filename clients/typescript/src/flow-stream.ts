import { type BackoffOptions, backoffDelayMs, retryAfterWithJitterMs, sleep } from './backoff.js';
import { ApiError, ProtocolError, RevokedError } from './errors.js';
import { createSseParser, type SseEvent } from './sse-parser.js';
import { apiError } from './transport.js';
import type { EnergyFlowResponse, ErrorCode } from './types.js';

// Push (docs/api.md "Push"): an async iterator over an installation's energy-flow changes. It
// reconnects with backoff whenever the stream drops or falls silent, resumes with
// Last-Event-ID (the server then skips a first event the caller already has), never yields the
// same event id twice in a row, and ends with a RevokedError whenever the key may not read the
// installation: refused at the first request, refused at a reconnect, or told so on the stream.

export interface EnergyFlowEvent {
  /** The event id: the flow body's ETag. */
  readonly id: string;
  /** Exactly what getInstallationCurrentEnergyFlow serves at that moment. */
  readonly body: EnergyFlowResponse;
  /** Data age: the flow's `lastUpdated`, or null when no device is online. */
  readonly lastModified: Date | null;
}

export interface StreamOptions {
  /** Ends the iteration (the iterator throws the signal's reason). */
  readonly signal?: AbortSignal;
  /** The id of the last event already seen, e.g. kept across restarts of the caller. */
  readonly lastEventId?: string;
  /** Reconnect when nothing (not even a keep-alive comment) arrived for this long, ms. */
  readonly idleTimeoutMs?: number;
  /** Reconnect backoff; a server's `retry:` raises the base. */
  readonly backoff?: Partial<BackoffOptions>;
  /** Called each time a stream is open (status 200). */
  readonly onOpen?: () => void;
  /** Called before each wait to reconnect, with why. */
  readonly onRetry?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
}

export interface StreamDeps {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly fetch: typeof fetch;
  readonly now: () => number;
  readonly random: () => number;
}

/** The server's heartbeat is at most 15 s apart (docs/api.md): three missed, the link is gone. */
const DEFAULT_IDLE_TIMEOUT_MS = 45_000;
const DEFAULT_BACKOFF: BackoffOptions = { baseDelayMs: 250, maxDelayMs: 15_000 };
/**
 * A stream that stayed open this long (one heartbeat interval) was healthy: the next reconnect
 * starts the backoff over. One that ends sooner, even after sending events (a proxy that answers
 * and closes), counts as a failed attempt, so such a loop backs off instead of spinning.
 */
const HEALTHY_STREAM_MS = 15_000;
const REVOKED_STATUS: Partial<Record<ErrorCode, number>> = { UNAUTHORIZED: 401, DOESNT_EXIST: 404 };

export async function* streamEnergyFlow(
  deps: StreamDeps,
  installationId: number,
  options: StreamOptions = {},
): AsyncGenerator<EnergyFlowEvent, void, undefined> {
  if (!Number.isSafeInteger(installationId)) {
    throw new RangeError(`not an installation id: ${installationId}`);
  }
  const url = `${deps.baseUrl.replace(/\/+$/, '')}/streams/installationCurrentEnergyFlow?installationId=${installationId}`;
  const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const backoff = { ...DEFAULT_BACKOFF, ...options.backoff };
  let lastId = options.lastEventId ?? null;
  let opened = false;
  let attempt = 0;
  let openedAtMs: number | null = null; // when the current stream answered 200
  for (;;) {
    options.signal?.throwIfAborted();
    const link = new AbortController();
    const signal = options.signal ? AbortSignal.any([options.signal, link.signal]) : link.signal;
    let failure: unknown;
    try {
      const headers: Record<string, string> = {
        'api-key': deps.apiKey,
        accept: 'text/event-stream',
      };
      if (lastId !== null) headers['last-event-id'] = lastId;
      const res = await deps.fetch(url, { headers, signal });
      if (res.status !== 200) {
        const error = await apiError(res, deps.now());
        if (!error.retriable) throw refusal(error, opened, installationId);
        failure = error;
      } else {
        opened = true;
        openedAtMs = deps.now();
        options.onOpen?.();
        const parser = createSseParser();
        for await (const event of events(res, link, idleTimeoutMs, parser)) {
          if (event.event === 'revoked') throw revoked(event, installationId);
          if (event.event !== 'energyFlow' || event.id === undefined || event.id === lastId) {
            continue;
          }
          lastId = event.id;
          yield flowEvent(event.id, event.data);
        }
        if (parser.retryMs !== null) backoff.baseDelayMs = parser.retryMs;
        failure = new Error('stream ended');
      }
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason;
      if (error instanceof ApiError || error instanceof ProtocolError) {
        if (!error.retriable) throw error;
      }
      failure = error;
    } finally {
      link.abort();
    }
    if (openedAtMs !== null && deps.now() - openedAtMs >= HEALTHY_STREAM_MS) attempt = 0;
    openedAtMs = null;
    const retryAfter = (failure as { retryAfterMs?: number | null }).retryAfterMs ?? null;
    const delayMs =
      retryAfter !== null
        ? retryAfterWithJitterMs(retryAfter, deps.random)
        : backoffDelayMs(attempt, backoff, deps.random);
    options.onRetry?.({ attempt, delayMs, error: failure });
    attempt++;
    await sleep(delayMs, options.signal);
  }
}

/**
 * The SSE events of a response; aborts `link` when a read waits `idleTimeoutMs` for bytes. The
 * clock runs only while a read is pending: while the caller handles an event (the generator is
 * suspended at a yield) the link is not judged idle, however long that takes.
 */
async function* events(
  res: Response,
  link: AbortController,
  idleTimeoutMs: number,
  parser: ReturnType<typeof createSseParser>,
): AsyncGenerator<SseEvent> {
  if (res.body === null) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  try {
    for (;;) {
      const idle = setTimeout(() => link.abort(new Error('stream idle')), idleTimeoutMs);
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } finally {
        clearTimeout(idle);
      }
      if (chunk.done) return;
      yield* parser.push(chunk.value);
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}

function flowEvent(id: string, data: string): EnergyFlowEvent {
  const body = JSON.parse(data) as EnergyFlowResponse;
  const lastUpdated = body.data?.lastUpdated;
  return { id, body, lastModified: lastUpdated ? new Date(lastUpdated) : null };
}

function revoked(event: SseEvent, installationId: number): RevokedError {
  let code: ErrorCode = 'UNAUTHORIZED';
  try {
    code = (JSON.parse(event.data) as { error: ErrorCode }).error;
  } catch {
    // An unreadable envelope still ends the stream: the server closes it after this event.
  }
  return new RevokedError(REVOKED_STATUS[code] ?? 401, code, installationId, 'stream');
}

/**
 * A refused (re)connect. Access refusals as the API answers them (401 `UNAUTHORIZED`, 404
 * `DOESNT_EXIST`; a 403 with the envelope, from a gateway in front of it) are a RevokedError,
 * whether or not a stream was ever open: retrying cannot help either way. Another 404 (no such
 * route: a wrong `baseUrl`) and a 400 stay what they are.
 */
function refusal(error: ApiError | ProtocolError, opened: boolean, installationId: number) {
  if (!(error instanceof ApiError)) return error;
  const access =
    error.status === 401 ||
    error.status === 403 ||
    (error.status === 404 && error.code === 'DOESNT_EXIST');
  if (!access) return error;
  return new RevokedError(error.status, error.code, installationId, opened ? 'reconnect' : 'open');
}
