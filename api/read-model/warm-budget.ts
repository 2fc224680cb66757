// How many installations the near-cache may newly keep per second. Keeping one costs a
// subscription, a read of its whole snapshot and, when the cache is full, another's
// unsubscription: about what PAYBACK_HITS misses cost. A kept installation has repaid that once
// it was served from memory PAYBACK_HITS times; one let go before (evicted, or written faster
// than it was read) has not. The rate follows what the kept installations repay: each that does
// raises it by a tenth, each that does not halves it, so it settles where about nine in ten
// repay (ln 2 / (ln 2 + ln 1.1) = 0.88). It starts low (a slow start, as TCP's): keeping is paid
// for by what kept installations already repaid, so filling an empty cache costs no more than it
// has earned. A poll that comes back to what it kept too seldom (a uniform or round-robin poll
// much wider than the cache) keeps little and slowly, while a hot set repays at once and the rate
// climbs to the highest within seconds (each repaid one raises it, and the faster it keeps, the
// more repay).

export interface WarmBudget {
  /** Whether one more installation may be kept now: a token at the current rate. */
  take(monotonicMs: number): boolean;
  /** `id` was kept: it now has to repay. */
  kept(id: number): void;
  /** `id` was served from memory. */
  hit(id: number): void;
  /** `id` was let go (evicted or released). */
  dropped(id: number): void;
  /** Everything kept was dropped at once (not for want of hits): nothing is judged. */
  clear(): void;
  /** Installations a second, now. */
  readonly rate: number;
}

export const MAX_WARMS_PER_SECOND = 5_000;
export const MIN_WARMS_PER_SECOND = 2;
export const START_WARMS_PER_SECOND = 10;
export const PAYBACK_HITS = 3;
const REPAID_RAISE = 1.1;
const UNPAID_CUT = 0.5;

export function createWarmBudget(startMs: number): WarmBudget {
  let rate = START_WARMS_PER_SECOND;
  let tokens = START_WARMS_PER_SECOND;
  let tokensAt = startMs;
  // Kept installations that have not repaid yet: their hits from memory so far.
  const unpaid = new Map<number, number>();

  return {
    get rate() {
      return rate;
    },
    take(monotonicMs) {
      tokens = Math.min(rate, tokens + ((monotonicMs - tokensAt) * rate) / 1000);
      tokensAt = monotonicMs;
      if (tokens < 1) return false;
      tokens--;
      return true;
    },
    kept(id) {
      unpaid.set(id, 0);
    },
    hit(id) {
      if (unpaid.size === 0) return;
      const hits = unpaid.get(id);
      if (hits === undefined) return;
      if (hits + 1 < PAYBACK_HITS) unpaid.set(id, hits + 1);
      else {
        unpaid.delete(id);
        rate = Math.min(MAX_WARMS_PER_SECOND, rate * REPAID_RAISE);
      }
    },
    dropped(id) {
      if (unpaid.delete(id)) rate = Math.max(MIN_WARMS_PER_SECOND, rate * UNPAID_CUT);
    },
    clear() {
      unpaid.clear();
    },
  };
}
