import { describe, expect, it } from 'vitest';
import {
  createWarmBudget,
  MAX_WARMS_PER_SECOND,
  MIN_WARMS_PER_SECOND,
  PAYBACK_HITS,
  START_WARMS_PER_SECOND,
} from '../../api/read-model/warm-budget.js';

// Issue 38: the near-cache keeps new installations only as fast as the kept ones repay their
// cost (PAYBACK_HITS hits from memory before they are let go).

/** Keeps `n` installations from `from` on, each served `hits` times, then lets them all go. */
function cycle(budget: ReturnType<typeof createWarmBudget>, from: number, n: number, hits: number) {
  for (let id = from; id < from + n; id++) {
    budget.kept(id);
    for (let h = 0; h < hits; h++) budget.hit(id);
  }
  for (let id = from; id < from + n; id++) budget.dropped(id);
}

describe('warm budget', () => {
  it('starts low, as tokens: a second of them at once, then the rate', () => {
    const budget = createWarmBudget(0);
    let taken = 0;
    while (budget.take(0)) taken++;
    expect(taken).toBe(START_WARMS_PER_SECOND);
    expect(budget.take(1000 / START_WARMS_PER_SECOND / 2)).toBe(false);
    expect(budget.take(1000 / START_WARMS_PER_SECOND)).toBe(true);
  });

  it('climbs from the start to the highest rate as what it keeps repays', () => {
    const budget = createWarmBudget(0);
    // Each repaid installation raises the rate by a tenth: 2,500-fold takes some 82 of them.
    cycle(budget, 1, 90, PAYBACK_HITS);
    expect(budget.rate).toBe(MAX_WARMS_PER_SECOND);
  });

  it('falls to the lowest rate while what it keeps is let go before it repays', () => {
    const budget = createWarmBudget(0);
    cycle(budget, 1, 20, PAYBACK_HITS - 1);
    expect(budget.rate).toBe(MIN_WARMS_PER_SECOND);
    // At that rate it hands out two a second, not a burst of what it had.
    let taken = 0;
    for (let ms = 0; ms <= 10_000; ms += 10) if (budget.take(ms)) taken++;
    expect(taken).toBeLessThanOrEqual(2 * 10 + 2);
  });

  it('climbs back from the lowest rate once what it keeps repays', () => {
    const budget = createWarmBudget(0);
    cycle(budget, 1, 20, 0);
    expect(budget.rate).toBe(MIN_WARMS_PER_SECOND);
    cycle(budget, 100, 100, PAYBACK_HITS);
    expect(budget.rate).toBe(MAX_WARMS_PER_SECOND);
  });

  it('settles where about nine in ten of what it keeps repay', () => {
    const rateAt = (repaidPerTen: number) => {
      const budget = createWarmBudget(0);
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

  it('counts hits only on what it kept, and judges nothing it was told to forget', () => {
    const budget = createWarmBudget(0);
    budget.hit(1);
    budget.kept(2);
    budget.clear();
    budget.dropped(2);
    expect(budget.rate).toBe(START_WARMS_PER_SECOND);
  });
});
