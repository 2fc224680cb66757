// How often each installation was asked for lately, approximately, in a few dozen bytes per
// cache entry: the count-min sketch of TinyLFU as Caffeine's FrequencySketch keeps it (four counters
// per item, each saturating at 15, the item's estimate their minimum; every time as many
// increments as ten times the cache's capacity were counted, all counters are halved, so old
// popularity fades). The near-cache admits an installation only when it is asked for more
// often than the entry it would evict (Einziger, Friedman and Manes, "TinyLFU: A Highly
// Efficient Cache Admission Policy", 2017).

export interface FrequencySketch {
  /** Counts one request for `id`. */
  increment(id: number): void;
  /** The estimated count of `id` since the last halvings (0-15). */
  frequency(id: number): number;
}

const MAX_COUNT = 15;
const SEEDS = [0x9e3779b1, 0x85ebca77, 0xc2b2ae3d, 0x27d4eb2f] as const;

export function createFrequencySketch(capacity: number): FrequencySketch {
  // A power of two of at least 8 counters per entry in each of the 4 rows (Caffeine keeps 16
  // per entry over its 4 hashes), so the polled set around the cache collides little; an
  // index is then a mask. A byte per counter: 10,000 entries take 512 KiB.
  let width = 16;
  while (width < 8 * capacity) width *= 2;
  const mask = width - 1;
  const counters = new Uint8Array(width * SEEDS.length);
  const sampleSize = 10 * Math.max(1, capacity);
  let samples = 0;

  const index = (id: number, row: number): number => {
    // Mixes both halves of a safe integer: ids above 2^32 spread too.
    const low = id >>> 0;
    const high = Math.floor(id / 0x1_0000_0000) >>> 0;
    let h = Math.imul(low ^ Math.imul(high, 0x27d4eb2f), SEEDS[row] as number);
    h ^= h >>> 15;
    h = Math.imul(h, 0x2c1b3c6d);
    h ^= h >>> 12;
    return row * width + ((h >>> 0) & mask);
  };

  function halve(): void {
    for (let i = 0; i < counters.length; i++) counters[i] = (counters[i] as number) >>> 1;
    samples = Math.floor(samples / 2);
  }

  return {
    increment(id) {
      let added = false;
      for (let row = 0; row < SEEDS.length; row++) {
        const i = index(id, row);
        const count = counters[i] as number;
        if (count < MAX_COUNT) {
          counters[i] = count + 1;
          added = true;
        }
      }
      if (added && ++samples >= sampleSize) halve();
    },
    frequency(id) {
      let min = MAX_COUNT;
      for (let row = 0; row < SEEDS.length; row++) {
        const count = counters[index(id, row)] as number;
        if (count < min) min = count;
      }
      return min;
    },
  };
}
