import type { Entry, EntryTable } from './entry-table.js';
import { createFrequencySketch } from './frequency-sketch.js';

// TinyLFU admission: every lookup is counted in the frequency sketch, and an installation missed
// is kept while there is room, else only when asked for more often than the entry it evicts.

export interface Admission {
  /** Counts a lookup of `id`. */
  seen(id: number): void;
  /** Whether `id`, not kept, is worth keeping now. */
  admits(id: number): boolean;
}

// Keeping costs a subscription and a read of the whole snapshot (several reads' worth): an
// installation asked for less than thrice lately would not repay it (a sweep, a poll wider
// than the cache).
const MIN_FREQUENCY = 3;

export function createAdmission(table: EntryTable, entries: number): Admission {
  const sketch = createFrequencySketch(entries);
  return {
    seen: (id) => sketch.increment(id),
    admits(id) {
      if (entries === 0 || table.has(id)) return false;
      const frequency = sketch.frequency(id);
      if (frequency < MIN_FREQUENCY) return false;
      if (!table.full()) return true;
      return frequency > sketch.frequency((table.oldest as Entry).id);
    },
  };
}
