import type { RateLimitState } from './types.js';

// The IETF httpapi RateLimit header fields as the API writes them (docs/api.md "Quotas"):
//   RateLimit-Policy: "default";q=100;w=60
//   RateLimit: "default";r=42;t=17

const PARAM = /;\s*([a-z]+)=(\d+(?:\.\d+)?)/g;

function params(value: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of value.matchAll(PARAM)) out.set(m[1] as string, Number(m[2]));
  return out;
}

/** The quota state of an answer, or null when it carries no (parsable) RateLimit header. */
export function parseRateLimit(headers: Headers, nowMs: number): RateLimitState | null {
  const limit = headers.get('ratelimit');
  if (limit === null) return null;
  const now = params(limit);
  const remaining = now.get('r');
  const reset = now.get('t');
  if (remaining === undefined || reset === undefined) return null;
  const policy = params(headers.get('ratelimit-policy') ?? '');
  return {
    limit: policy.get('q') ?? Number.NaN,
    windowSeconds: policy.get('w') ?? Number.NaN,
    remaining,
    resetAtMs: nowMs + reset * 1000,
  };
}

/** `Retry-After` in ms: delay-seconds or an HTTP-date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
  if (value === null || value.trim() === '') return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

/**
 * How long after `nowMs` the next request should start so the budget lasts until the window
 * resets: the time left spread evenly over the units left, the next request counted at
 * `costUnits` (1, or 0.1 when the last answer was a 304 and the next is likely one too). With
 * none left (`r` is whole units rounded down, so up to 0.9 may remain): wait for the reset.
 * Spacing, not a ban: a poller slower than this never waits.
 */
export function spacingMs(state: RateLimitState, nowMs: number, costUnits = 1): number {
  const untilReset = Math.max(0, state.resetAtMs - nowMs);
  if (state.remaining <= 0) return untilReset;
  return (untilReset * costUnits) / state.remaining;
}
