import { describe, expect, it } from 'vitest';
import {
  createWorth,
  HIT_SAVES,
  LOOKUP_COSTS,
  SAMPLE_SHARE,
  sampled,
} from '../../api/near-cache/worth.js';

// Issue 55: the near-cache steps out of the way where it does not pay, and comes back where it
// does, judged on a sliding window of lookups (api/near-cache/worth.ts).

const WINDOW = 800;

function traffic(hitRatio: number) {
  let acc = 0;
  // Evenly spread hits: exactly `hitRatio` of any run of lookups, no randomness to flake on.
  return () => {
    acc += hitRatio;
    if (acc < 1) return false;
    acc -= 1;
    return true;
  };
}

function judged(grace = { lookups: 0, full: true }) {
  const steps: boolean[] = [];
  const worth = createWorth({
    windowLookups: WINDOW,
    graceLookups: grace.lookups,
    full: () => grace.full,
    onStep: (bypass) => steps.push(bypass),
  });
  const run = (lookups: number, hit: () => boolean, unpaidEvery = 0) => {
    for (let i = 1; i <= lookups; i++) {
      worth.lookup(hit());
      if (unpaidEvery > 0 && i % unpaidEvery === 0) worth.unpaid();
    }
  };
  return { worth, steps, run };
}

const breakEven = LOOKUP_COSTS / HIT_SAVES;

describe('near-cache worth', () => {
  it('steps out after a window of one-hit traffic, not before', () => {
    const { worth, steps, run } = judged();
    run(WINDOW - 1, traffic(0.01));
    expect(worth.bypass).toBe(false);
    run(1, traffic(0.01));
    expect(worth.bypass).toBe(true);
    expect(steps).toEqual([true]);
  });

  it('stays where hits pay for the bookkeeping, and steps out where they do not', () => {
    const paying = judged();
    paying.run(10 * WINDOW, traffic(breakEven + 0.02));
    expect(paying.worth.bypass).toBe(false);
    const losing = judged();
    losing.run(10 * WINDOW, traffic(breakEven - 0.02));
    expect(losing.worth.bypass).toBe(true);
  });

  it('counts what unpaid keeps cost: hits that pay for lookups do not pay for one unpaid keep in ten', () => {
    const { worth, run } = judged();
    run(10 * WINDOW, traffic(breakEven + 0.02), 10);
    expect(worth.bypass).toBe(true);
  });

  it('gives a filling cache its grace, and judges one whose admission wants little at once', () => {
    // Not full, and a third of its misses are of installations its admission wants: filling.
    const filling = judged({ lookups: 5 * WINDOW, full: false });
    const fill = (lookups: number) => {
      for (let i = 0; i < lookups; i++) {
        filling.worth.lookup(false);
        if (i % 3 === 0) filling.worth.wanted();
      }
    };
    fill(5 * WINDOW - 1);
    expect(filling.worth.bypass).toBe(false);
    fill(WINDOW);
    expect(filling.worth.bypass).toBe(true);
    // The same misses, with the admission wanting one in ten: a poll wider than the cache.
    const sweeping = judged({ lookups: 5 * WINDOW, full: false });
    for (let i = 0; i < WINDOW; i++) {
      sweeping.worth.lookup(false);
      if (i % 10 === 0) sweeping.worth.wanted();
    }
    expect(sweeping.worth.bypass).toBe(true);
    // A full cache is judged at once, whatever its admission wants.
    const full = judged({ lookups: 5 * WINDOW, full: true });
    for (let i = 0; i < WINDOW; i++) {
      full.worth.lookup(false);
      full.worth.wanted();
    }
    expect(full.worth.bypass).toBe(true);
  });

  it('comes back when the sample shows reuse, and not on a flat edge', () => {
    const { worth, steps, run } = judged();
    run(WINDOW, traffic(0));
    expect(worth.bypass).toBe(true);
    // Just above break-even: not enough to come back (hysteresis).
    run(10 * WINDOW, traffic(breakEven + 0.01));
    expect(worth.bypass).toBe(true);
    run(WINDOW, traffic(0.5));
    expect(worth.bypass).toBe(false);
    expect(steps).toEqual([true, false]);
    expect(worth.steps).toEqual({ out: 1, back: 1 });
  });

  it('samples about one installation in SAMPLE_SHARE, of dense and of sparse ids', () => {
    for (const ids of [
      Array.from({ length: 160_000 }, (_, i) => i + 1),
      Array.from({ length: 160_000 }, (_, i) => 1_000_000 + 37 * i),
    ]) {
      const share = ids.filter(sampled).length / ids.length;
      expect(share).toBeGreaterThan(0.9 / SAMPLE_SHARE);
      expect(share).toBeLessThan(1.1 / SAMPLE_SHARE);
    }
  });
});
