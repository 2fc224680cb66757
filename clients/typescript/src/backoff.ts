// Waits between attempts: capped exponential backoff with full jitter (AWS Architecture Blog,
// "Exponential Backoff And Jitter"), and jitter added to a server's Retry-After so that clients
// told the same time do not all come back in the same instant.

export interface BackoffOptions {
  /** First delay's ceiling, ms. */
  readonly baseDelayMs: number;
  /** No delay exceeds this, ms. */
  readonly maxDelayMs: number;
}

/** Delay before retry number `attempt` (0 for the first retry), ms. */
export function backoffDelayMs(
  attempt: number,
  options: BackoffOptions,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(options.maxDelayMs, options.baseDelayMs * 2 ** attempt);
  return Math.round(random() * ceiling);
}

/** `Retry-After` plus up to 10 % (at least 100 ms, at most 1 s) of random extra, ms. */
export function retryAfterWithJitterMs(
  retryAfterMs: number,
  random: () => number = Math.random,
): number {
  const spread = Math.min(1000, Math.max(100, retryAfterMs * 0.1));
  return Math.round(retryAfterMs + random() * spread);
}

/** Resolves after `ms`, or rejects with the signal's reason once it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
