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

export interface Transport {
  read<T>(pathAndQuery: string, call?: CallOptions): Promise<ApiResult<T>>;
  /** The quota as the last answer told it; null before any, or when quotas are off. */
  rateLimit(): RateLimitState | null;
}

/** Answers worth another attempt of a read: the server asks to come back, or failed for now. */
const RETRIABLE_STATUS = new Set([408, 429, 500, 502, 503, 504]);

export function createTransport(options: TransportOptions): Transport {
  const base = options.baseUrl.replace(/\/+$/, '');
  let quota: RateLimitState | null = null;
  // Earliest start of the next request: quota spacing and a server's Retry-After both push it.
  let nextStartMs = 0;

  /** Reserves the next start slot and waits for it; throws when it lies past the deadline. */
  async function waitTurn(signal: AbortSignal, deadlineMs: number): Promise<void> {
    const now = options.now();
    const start = Math.max(now, nextStartMs);
    if (options.pacing && quota !== null) nextStartMs = start + spacingMs(quota, start);
    if (start <= now) return;
    if (start > deadlineMs) throw new TimeoutError(deadlineMs - now);
    await sleep(start - now, signal);
  }

  async function read<T>(pathAndQuery: string, call: CallOptions = {}): Promise<ApiResult<T>> {
    const url = base + pathAndQuery;
    const timeoutMs = call.timeoutMs ?? options.timeoutMs;
    const deadlineMs = options.now() + timeoutMs;
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new TimeoutError(timeoutMs)), timeoutMs);
    const signal = call.signal ? AbortSignal.any([call.signal, deadline.signal]) : deadline.signal;
    try {
      for (let attempt = 0; ; attempt++) {
        await waitTurn(signal, deadlineMs);
        const cached = options.cache?.get(url);
        const headers: Record<string, string> = { 'api-key': options.apiKey };
        if (cached) headers['if-none-match'] = cached.etag;
        let res: Response;
        try {
          res = await options.fetch(url, { headers, signal });
        } catch (error) {
          if (signal.aborted) throw signal.reason;
          if (attempt + 1 >= options.retry.maxAttempts) throw new NetworkError(error);
          await wait(backoffDelayMs(attempt, options.retry, options.random), deadlineMs, signal);
          continue;
        }
        const now = options.now();
        quota = parseRateLimit(res.headers, now) ?? quota;
        if (res.status === 304 && cached) {
          // A 304 carries no Last-Modified: the data age is the cached body's.
          return notModified(cached.body as T, cached.etag, cached.lastModified);
        }
        if (res.status === 200) return await success<T>(url, res);
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

  async function success<T>(url: string, res: Response): Promise<ApiResult<T>> {
    const text = await res.text();
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

  return { read, rateLimit: () => quota };
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
