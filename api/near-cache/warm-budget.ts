import { createRecency, type Linked } from './recency.js';

// How many installations the near-cache may newly keep a second. Keeping one costs a
// subscription, a read of its whole snapshot and, when the cache is full, another's
// unsubscription: about PAYBACK_HITS misses. A kept installation has repaid that once it was
// served from memory PAYBACK_HITS times while it could expect to stay: until the max age (when
// it is read again) while the cache fills, and once full, at most the time the current rate
// takes to turn the cache over. One that was not, or was let go first (evicted, or written
// faster than read), has not: it may stay, but the rate learns. (Judged only at eviction, a full
// cache evicts what repaid long ago while the new waits a whole turn: after a Zipf poll, a
// uniform one at 1M devices kept 457 a second for 1.9 % hits.)
// Each that repays raises the rate by a tenth, each that does not halves it: it settles where
// about nine in ten repay (ln 2 / (ln 2 + ln 1.1) = 0.88). It starts at 100 a second, so what an
// empty cache may spend before anything is judged is bounded (about 300 misses a second, for a
// minute at most), and a hot set repays at once and takes the rate to the highest within seconds.

export interface WarmBudget {
  /**
   * Whether one more installation may be kept now: a token at the current rate. `full`: the
   * cache is, so keeping one evicts another.
   */
  take(monotonicMs: number, full: boolean): boolean;
  /** `id` was kept at `monotonicMs`: it now has to repay. */
  kept(id: number, monotonicMs: number): void;
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
export const START_WARMS_PER_SECOND = 100;
export const PAYBACK_HITS = 3;
const REPAID_RAISE = 1.1;
const UNPAID_CUT = 0.5;

export function createWarmBudget(opts: {
  startMs: number;
  /** The near-cache's entries, now (fewer while it is out of the way: near-cache.ts). */
  capacity: () => number;
  /** The near-cache's max age: a kept installation is read again after it. */
  maxAgeMs: number;
  /** A kept installation was judged not to have repaid (worth.ts counts its cost). */
  unpaid?: () => void;
}): WarmBudget {
  const { startMs } = opts;
  let rate = START_WARMS_PER_SECOND;
  let tokens = START_WARMS_PER_SECOND;
  let tokensAt = startMs;
  // Kept installations that have not repaid yet, oldest first (recency.ts: taken from the front
  // on every take, which a Map would reach past a hole per one taken before).
  const unpaid = new Map<number, Unpaid>();
  const order = createRecency<Unpaid>();
  const forget = (kept: Unpaid) => {
    unpaid.delete(kept.id);
    order.remove(kept);
  };
  const cut = () => {
    rate = Math.max(MIN_WARMS_PER_SECOND, rate * UNPAID_CUT);
    opts.unpaid?.();
  };

  return {
    get rate() {
      return rate;
    },
    take(monotonicMs, full) {
      // The oldest first: those past their time have not repaid.
      const dueMs = full ? Math.min(opts.maxAgeMs, (1000 * opts.capacity()) / rate) : opts.maxAgeMs;
      for (let kept = order.oldest; kept !== null; kept = order.oldest) {
        if (monotonicMs - kept.keptAt < dueMs) break;
        forget(kept);
        cut();
      }
      tokens = Math.min(rate, tokens + ((monotonicMs - tokensAt) * rate) / 1000);
      tokensAt = monotonicMs;
      if (tokens < 1) return false;
      tokens--;
      return true;
    },
    kept(id, monotonicMs) {
      const before = unpaid.get(id);
      if (before !== undefined) forget(before);
      const kept: Unpaid = { id, hits: 0, keptAt: monotonicMs, older: null, newer: null };
      unpaid.set(id, kept);
      order.add(kept);
    },
    hit(id) {
      if (unpaid.size === 0) return;
      const kept = unpaid.get(id);
      if (kept === undefined) return;
      if (++kept.hits < PAYBACK_HITS) return;
      forget(kept);
      rate = Math.min(MAX_WARMS_PER_SECOND, rate * REPAID_RAISE);
    },
    dropped(id) {
      const kept = unpaid.get(id);
      if (kept === undefined) return;
      forget(kept);
      cut();
    },
    clear() {
      unpaid.clear();
      order.clear();
    },
  };
}

interface Unpaid extends Linked {
  readonly id: number;
  hits: number;
  readonly keptAt: number;
}
