import { backoffDelayMs, retryAfterWithJitterMs, sleep } from './backoff.js';
import { ApiError, NetworkError, ProtocolError, TimeoutError } from './errors.js';
import type { EtagCache } from './etag-cache.js';
import { parseRateLimit, parseRetryAfter, spacingMs } from './rate-limit.js';
import type { ApiResult, CallOptions, ErrorCode, RateLimitState } from './types.js';

// One read: wait for its turn (quota spacing, a server's Retry-After), send it with the key and
// the cached ETag, retry what may succeed later within the call's deadline, and report the data
// age and quota of the answer.

export interface RetryOptions {
  /** Attempts per call at most, the first included. */
  readonly maxAttempts: number;
  /** Backoff of connection errors and 5xx without Retry-After: first ceiling, ms. */
  readonly baseDelayMs: number;
  /** Backoff ceiling, ms. */
  readonly maxDelayMs: number;
}

export interface TransportOptions {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly fetch: typeof fetch;
  readonly timeoutMs: number;
  readonly retry: RetryOptions;
  /** Space requests by the RateLimit headers so the budget is not spent before the reset. */
  readonly pacing: boolean;
  readonly cache: EtagCache | null;
  readonly now: () => number;
  readonly random: () => number;
}

/** When a call must be done: one per call, shared by all its requests (bulk chunks, pages). */
export interface Deadline {
  /** ms since the epoch, by the transport's clock. */
  readonly atMs: number;
  /** The call's `timeoutMs`, the figure its TimeoutError reports. */
  readonly timeoutMs: number;
}

export interface Transport {
  /** One request; `deadline` when it is part of a larger call, else its own from `call`. */
  read<T>(pathAndQuery: string, call?: CallOptions, deadline?: Deadline): Promise<ApiResult<T>>;
  /** The deadline of a call starting now: `call.timeoutMs`, or the client's. */
  deadline(call?: CallOptions): Deadline;
  /** The quota as the last answer told it; null before any, or when quotas are off. */
  rateLimit(): RateLimitState | null;
}

/** Answers worth another attempt of a read: the server asks to come back, or failed for now. */
const RETRIABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);
/** A 304 costs a tenth of a request (docs/api.md "Quotas"). */
const NOT_MODIFIED_COST_UNITS = 0.1;

export function createTransport(options: TransportOptions): Transport {
  const base = options.baseUrl.replace(/\/+$/, '');
  let quota: RateLimitState | null = null;
  // Earliest start of the next request: quota spacing and a server's Retry-After both push it.
  let nextStartMs = 0;
  // What the last answer cost, quota units: the next request is spaced as if it costs the same.
  let lastCostUnits = 1;

  /**
   * Reserves the next start slot and waits for it. A slot past the deadline is not reserved (the
   * call fails at once), and a wait cut short gives its slot back unless a later one was reserved
   * after it, so a failed call does not delay the calls that come after it.
   */
  async function waitTurn(signal: AbortSignal, deadline: Deadline): Promise<void> {
    const now = options.now();
    const start = Math.max(now, nextStartMs);
    if (start > deadline.atMs) throw new TimeoutError(deadline.timeoutMs);
    const before = nextStartMs;
    if (options.pacing && quota !== null) {
      nextStartMs = start + spacingMs(quota, start, lastCostUnits);
    }
    const reserved = nextStartMs;
    if (start <= now) return;
    try {
      await sleep(start - now, signal);
    } catch (error) {
      if (nextStartMs === reserved) nextStartMs = before;
      throw error;
    }
  }

  function startDeadline(call: CallOptions = {}): Deadline {
    const timeoutMs = call.timeoutMs ?? options.timeoutMs;
    return { atMs: options.now() + timeoutMs, timeoutMs };
  }

  async function read<T>(
    pathAndQuery: string,
    call: CallOptions = {},
    deadline: Deadline = startDeadline(call),
  ): Promise<ApiResult<T>> {
    const url = base + pathAndQuery;
    const deadlineMs = deadline.atMs;
    const leftMs = deadlineMs - options.now();
    if (leftMs <= 0) throw new TimeoutError(deadline.timeoutMs);
    const expiry = new AbortController();
    const timer = setTimeout(() => expiry.abort(new TimeoutError(deadline.timeoutMs)), leftMs);
    const signal = call.signal ? AbortSignal.any([call.signal, expiry.signal]) : expiry.signal;
    try {
      for (let attempt = 0; ; attempt++) {
        await waitTurn(signal, deadline);
        const cached = options.cache?.get(url);
        const headers: Record<string, string> = { 'api-key': options.apiKey };
        if (cached) headers['if-none-match'] = cached.etag;
        let res: Response;
        // A 200's body is read here: a connection lost midway through it is a connection error.
        let text: string | null = null;
        try {
          res = await options.fetch(url, { headers, signal });
          if (res.status === 200) text = await res.text();
        } catch (error) {
          if (signal.aborted) throw signal.reason;
          if (attempt + 1 >= options.retry.maxAttempts) throw new NetworkError(error);
          await wait(backoffDelayMs(attempt, options.retry, options.random), deadlineMs, signal);
          continue;
        }
        const now = options.now();
        quota = parseRateLimit(res.headers, now) ?? quota;
        if (res.status !== 429) lastCostUnits = res.status === 304 ? NOT_MODIFIED_COST_UNITS : 1;
        if (res.status === 304 && cached) {
          // A 304 carries no Last-Modified: the data age is the cached body's.
          return notModified(cached.body as T, cached.etag, cached.lastModified);
        }
        if (text !== null) return success<T>(url, res, text);
        const failure = await apiError(res, now);
        if (!RETRIABLE_STATUS.has(res.status) || attempt + 1 >= options.retry.maxAttempts) {
          throw failure;
        }
        const delayMs =
          failure.retryAfterMs !== null
            ? retryAfterWithJitterMs(failure.retryAfterMs, options.random)
            : backoffDelayMs(attempt, options.retry, options.random);
        // Coming back sooner than asked only costs another refusal: no request of this client
        // starts before then, and a wait past the deadline is not started at all.
        if (failure.retryAfterMs !== null) nextStartMs = Math.max(nextStartMs, now + delayMs);
        if (now + delayMs > deadlineMs) throw failure;
        await sleep(delayMs, signal);
      }
    } catch (error) {
      throw signal.aborted ? signal.reason : error;
    } finally {
      clearTimeout(timer);
    }
  }

  async function wait(ms: number, deadlineMs: number, signal: AbortSignal): Promise<void> {
    await sleep(Math.min(ms, Math.max(0, deadlineMs - options.now())), signal);
  }

  function success<T>(url: string, res: Response, text: string): ApiResult<T> {
    let body: T;
    try {
      body = JSON.parse(text) as T;
    } catch {
      throw new ProtocolError('200 without a JSON body', 200);
    }
    const etag = res.headers.get('etag');
    const out = result(body, res, etag);
    if (etag !== null && options.cache) {
      options.cache.set(url, { etag, body, lastModified: out.lastModified, size: text.length });
    }
    return out;
  }

  function result<T>(body: T, res: Response, etag: string | null): ApiResult<T> {
    const lastModified = res.headers.get('last-modified');
    return {
      body,
      status: 200,
      notModified: false,
      etag,
      lastModified: lastModified === null ? null : new Date(lastModified),
      rateLimit: quota,
    };
  }

  function notModified<T>(body: T, etag: string, lastModified: Date | null): ApiResult<T> {
    return { body, status: 304, notModified: true, etag, lastModified, rateLimit: quota };
  }

  return { read, deadline: startDeadline, rateLimit: () => quota };
}

/** The error an answer other than 200/304 stands for; its body is read (and so released). */
export async function apiError(res: Response, nowMs: number): Promise<ApiError | ProtocolError> {
  const text = await res.text().catch(() => '');
  let code: unknown;
  try {
    code = (JSON.parse(text) as { error?: unknown }).error;
  } catch {
    code = undefined;
  }
  const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'), nowMs);
  if (typeof code === 'string') return new ApiError(res.status, code as ErrorCode, retryAfterMs);
  return new ProtocolError(`${res.status} without an error envelope`, res.status, retryAfterMs);
}
