import { describe, expect, it } from 'vitest';
import {
  createWarmBudget,
  MAX_WARMS_PER_SECOND,
  MIN_WARMS_PER_SECOND,
  PAYBACK_HITS,
  START_WARMS_PER_SECOND,
} from '../../api/near-cache/warm-budget.js';

// Issue 38: the near-cache keeps new installations only as fast as the kept ones repay their
// cost (PAYBACK_HITS hits from memory before they are let go).

const CAPACITY = 10_000;
const MAX_AGE_MS = 60_000;

/** Keeps `n` installations from `from` on, each served `hits` times, then lets them all go. */
function cycle(budget: ReturnType<typeof createWarmBudget>, from: number, n: number, hits: number) {
  for (let id = from; id < from + n; id++) {
    budget.kept(id, 0);
    for (let h = 0; h < hits; h++) budget.hit(id);
  }
  for (let id = from; id < from + n; id++) budget.dropped(id);
}

describe('warm budget', () => {
  it('starts low, as tokens: a second of them at once, then the rate', () => {
    const budget = createWarmBudget({ startMs: 0, capacity: () => CAPACITY, maxAgeMs: MAX_AGE_MS });
    let taken = 0;
    while (budget.take(0, false)) taken++;
    expect(taken).toBe(START_WARMS_PER_SECOND);
    expect(budget.take(1000 / START_WARMS_PER_SECOND / 2, false)).toBe(false);
    expect(budget.take(1000 / START_WARMS_PER_SECOND, false)).toBe(true);
  });

  it('climbs from the start to the highest rate as what it keeps repays', () => {
    const budget = createWarmBudget({ startMs: 0, capacity: () => CAPACITY, maxAgeMs: MAX_AGE_MS });
    // Each repaid installation raises the rate by a tenth: 2,500-fold takes some 82 of them.
    cycle(budget, 1, 90, PAYBACK_HITS);
    expect(budget.rate).toBe(MAX_WARMS_PER_SECOND);
  });

  it('falls to the lowest rate while what it keeps is let go before it repays', () => {
    const budget = createWarmBudget({ startMs: 0, capacity: () => CAPACITY, maxAgeMs: MAX_AGE_MS });
    cycle(budget, 1, 20, PAYBACK_HITS - 1);
    expect(budget.rate).toBe(MIN_WARMS_PER_SECOND);
    // At that rate it hands out two a second, not a burst of what it had.
    let taken = 0;
    for (let ms = 0; ms <= 10_000; ms += 10) if (budget.take(ms, false)) taken++;
    expect(taken).toBeLessThanOrEqual(2 * 10 + 2);
  });

  it('climbs back from the lowest rate once what it keeps repays', () => {
    const budget = createWarmBudget({ startMs: 0, capacity: () => CAPACITY, maxAgeMs: MAX_AGE_MS });
    cycle(budget, 1, 20, 0);
    expect(budget.rate).toBe(MIN_WARMS_PER_SECOND);
    cycle(budget, 100, 100, PAYBACK_HITS);
    expect(budget.rate).toBe(MAX_WARMS_PER_SECOND);
  });

  it('settles where about nine in ten of what it keeps repay', () => {
    const rateAt = (repaidPerTen: number) => {
      const budget = createWarmBudget({
        startMs: 0,
        capacity: () => CAPACITY,
        maxAgeMs: MAX_AGE_MS,
      });
      cycle(budget, -100, 100, PAYBACK_HITS);
      for (let round = 0; round < 200; round++)
        for (let i = 0; i < 10; i++)
          cycle(budget, round * 10 + i, 1, i < repaidPerTen ? PAYBACK_HITS : 1);
      return budget.rate;
    };
    expect(rateAt(10)).toBe(MAX_WARMS_PER_SECOND);
    // Each ten ends with the one that did not repay: half the highest rate, not the lowest.
    expect(rateAt(9)).toBe(MAX_WARMS_PER_SECOND / 2);
    expect(rateAt(8)).toBe(MIN_WARMS_PER_SECOND);
    expect(rateAt(5)).toBe(MIN_WARMS_PER_SECOND);
  });

  it('judges what has not repaid by the time it could expect to go as not repaid, though it stays kept', () => {
    const budget = createWarmBudget({ startMs: 0, capacity: () => CAPACITY, maxAgeMs: MAX_AGE_MS });
    cycle(budget, 1, 90, PAYBACK_HITS);
    expect(budget.rate).toBe(MAX_WARMS_PER_SECOND);
    // At the highest rate a full cache turns over in 2 s: that is when they are due once full.
    const dueMs = (1000 * CAPACITY) / MAX_WARMS_PER_SECOND;
    for (let id = 100; id < 120; id++) budget.kept(id, 1_000);
    for (let id = 100; id < 110; id++) for (let h = 0; h < PAYBACK_HITS; h++) budget.hit(id);
    budget.take(1_000 + dueMs - 1, true);
    expect(budget.rate).toBe(MAX_WARMS_PER_SECOND);
    // Due: the ten that were not read thrice each halve it.
    budget.take(1_000 + dueMs, true);
    expect(budget.rate).toBe(MAX_WARMS_PER_SECOND / 2 ** 10);
    // Judged once: a late hit or the drop does not count them again.
    for (let id = 110; id < 120; id++) {
      for (let h = 0; h < PAYBACK_HITS; h++) budget.hit(id);
      budget.dropped(id);
    }
    expect(budget.rate).toBe(MAX_WARMS_PER_SECOND / 2 ** 10);
  });

  it('gives what it keeps until the max age while the cache is not full, and at a low rate', () => {
    for (const full of [false, true]) {
      const budget = createWarmBudget({
        startMs: 0,
        capacity: () => CAPACITY,
        maxAgeMs: MAX_AGE_MS,
      });
      cycle(budget, 1, 90, PAYBACK_HITS);
      // Not full: however fast it keeps, each has until the max age (no eviction comes first).
      // Full at the lowest rates: a turn of the cache takes longer than the max age.
      if (full) cycle(budget, 100, 20, 0);
      const rate = budget.rate;
      budget.kept(1_000, 0);
      budget.take(MAX_AGE_MS - 1, full);
      expect(budget.rate).toBe(rate);
      budget.take(MAX_AGE_MS, full);
      expect(budget.rate).toBe(Math.max(MIN_WARMS_PER_SECOND, rate / 2));
    }
  });

  it('counts hits only on what it kept, and judges nothing it was told to forget', () => {
    const budget = createWarmBudget({ startMs: 0, capacity: () => CAPACITY, maxAgeMs: MAX_AGE_MS });
    budget.hit(1);
    budget.kept(2, 0);
    budget.clear();
    budget.dropped(2);
    expect(budget.rate).toBe(START_WARMS_PER_SECOND);
  });
});
