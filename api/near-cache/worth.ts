import { PAYBACK_HITS } from './warm-budget.js';

// What the near-cache is worth in the pattern at hand, judged over a sliding window of lookups:
// the API CPU its hits save, less what its bookkeeping costs (the lookup, the sketch, the
// admission and the table on every request, and each installation it kept that did not repay
// its subscription and whole snapshot read: warm-budget.ts judges that when it is due; one that
// repaid was paid for by hits counted already, and charging each keep when it happens would
// judge a filling cache by its investment before its return). Both in misses' worth of API CPU,
// from the scale case's figures (bench/HISTORY.md, "Near-cache at scale: issue 38's last table"
// and the sessions before it): a hit costs 0.58 of a miss (cached 1.72x the req/s of the
// near-cache off at 1k devices; 1.09x at 27 % hits at 1M), the bookkeeping 1.8 µs of a miss's
// ~55 µs when nothing hits, and a kept installation what PAYBACK_HITS hits save. So the cache pays above about 8 % hits when what it keeps repays.
//
// When it does not pay (a poll wider than the cache, a sweep: one-hit traffic) it steps out of
// the way (bypass): reads go straight to Redis with no lookup, no sketch, no admission, except
// for a sampled share of installations (1 in SAMPLE_SHARE by a hash of the id) that keeps the
// whole path on a table scaled down by the same share. The sample's hit ratio is then the whole
// cache's, neither overstated by a small sample in a large table nor understated (SHARDS:
// Waldspurger et al., "Efficient MRC Construction with SHARDS", FAST '15). When the sample shows
// clear reuse the cache comes back whole. Anchors: Caffeine's adaptive W-TinyLFU, which climbs
// the hit rate of sample periods, and the bypass of one-hit traffic that CDN caches do
// ("second-hit caching"); here the step is all or nothing, since a cache that does not pay has
// no window size that pays.

/** Of a miss's API CPU, what a hit saves, what a lookup's bookkeeping and a kept entry cost. */
export const HIT_SAVES = 0.42;
export const LOOKUP_COSTS = 0.033;
export const KEEP_COSTS = PAYBACK_HITS * HIT_SAVES;
/**
 * Coming back takes far more worth than stepping out (about 44 % hits in the sample against 8 %):
 * each step drops or refills thousands of entries, and near the edge the cache gains nothing
 * either way (Zipf 0.99 over 95,238 installations, 42 % hits, read 0.94-1.09x of no cache).
 */
const COME_BACK_ABOVE = 0.15;
/** 1 in SAMPLE_SHARE installations keeps the whole path in bypass: ids whose hash's top bits are 0. */
const SAMPLE_BITS = 4;
export const SAMPLE_SHARE = 1 << SAMPLE_BITS;
/** A cache is filling while at least this share of its misses is of what its admission wants. */
const FILLING_WANTED = 0.25;
/** A window of lookups is judged in SEGMENTS steps: it slides by a segment. */
const SEGMENTS = 8;

/** Whether `id` is in the sampled share: a multiplicative hash's top bits, spread for any ids. */
export const sampled = (id: number): boolean =>
  Math.imul(id | 0, 0x9e3779b1) >>> (32 - SAMPLE_BITS) === 0;

export interface Worth {
  /** A lookup on the whole path, answered from memory (`hit`) or not. */
  lookup(hit: boolean): void;
  /** A kept installation did not repay keeping it (warm-budget.ts). */
  unpaid(): void;
  /** A miss the admission would keep (whether or not the warm budget let it now). */
  wanted(): void;
  /** Whether the cache is out of the way now. */
  readonly bypass: boolean;
  /** Times it stepped out and came back, since start. */
  readonly steps: { readonly out: number; readonly back: number };
}

interface Segment {
  lookups: number;
  hits: number;
  unpaid: number;
  wanted: number;
}

export function createWorth(opts: {
  /** Lookups judged per window (of the whole path: in bypass, the sample's). */
  windowLookups: number;
  /**
   * Lookups a cache that is filling is given before it is judged (on start and on coming back):
   * not full, and most of its misses are of installations its admission wants, so what holds it
   * back is how fast it may keep them, and its hit ratio says how far it got, not what it is
   * worth. One whose admission wants few of its misses (a poll wider than it) is judged at once.
   */
  graceLookups: number;
  /** Whether the table is full (then it is judged at once). */
  full(): boolean;
  /** Called on each step, after `bypass` changed. */
  onStep(bypass: boolean): void;
}): Worth {
  const perSegment = Math.max(1, Math.ceil(opts.windowLookups / SEGMENTS));
  const segments: Segment[] = Array.from({ length: SEGMENTS }, () => ({
    lookups: 0,
    hits: 0,
    unpaid: 0,
    wanted: 0,
  }));
  let current = 0;
  // Segments filled since the last step: a window is judged only once it holds only this mode.
  let filled = 0;
  let sinceStep = 0;
  let bypass = false;
  const steps = { out: 0, back: 0 };

  function judge(): void {
    if (filled < SEGMENTS) return;
    let lookups = 0;
    let misses = 0;
    let value = 0;
    let wanted = 0;
    for (const s of segments) {
      lookups += s.lookups;
      misses += s.lookups - s.hits;
      value += s.hits * HIT_SAVES - s.lookups * LOOKUP_COSTS - s.unpaid * KEEP_COSTS;
      wanted += s.wanted;
    }
    if (bypass ? value <= COME_BACK_ABOVE * lookups : value >= 0) return;
    const filling = !opts.full() && wanted >= FILLING_WANTED * misses;
    if (!bypass && filling && sinceStep < opts.graceLookups) return;
    bypass = !bypass;
    if (bypass) steps.out++;
    else steps.back++;
    filled = 0;
    sinceStep = 0;
    opts.onStep(bypass);
  }

  return {
    lookup(hit) {
      sinceStep++;
      const s = segments[current] as Segment;
      s.lookups++;
      if (hit) s.hits++;
      if (s.lookups < perSegment) return;
      current = (current + 1) % SEGMENTS;
      const next = segments[current] as Segment;
      next.lookups = 0;
      next.hits = 0;
      next.unpaid = 0;
      next.wanted = 0;
      filled++;
      judge();
    },
    unpaid() {
      (segments[current] as Segment).unpaid++;
    },
    wanted() {
      (segments[current] as Segment).wanted++;
    },
    get bypass() {
      return bypass;
    },
    steps,
  };
}
