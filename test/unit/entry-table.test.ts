import { describe, expect, it } from 'vitest';
import { createEntryTable } from '../../api/near-cache/entry-table.js';
import { snapshotOf } from '../../api/near-cache/snapshot.js';

// The near-cache's table when its bound moves (the cache stepping out of the way and back,
// api/near-cache/worth.ts): what goes releases its channel unjudged, and an entry dropped while
// a read still holds it cannot be linked back into the order (which would loop every eviction).

function table(entries: number) {
  const held = new Set<number>();
  const dropped: number[] = [];
  const t = createEntryTable({
    subscriber: {
      hold: async (id) => {
        held.add(id);
        return true;
      },
      release: (id) => {
        held.delete(id);
      },
    },
    entries,
    maxBytes: 1 << 30,
    maxAgeMs: 60_000,
    dropped: (id) => dropped.push(id),
  });
  const keep = (id: number) => t.keep(id, snapshotOf(1, '{}', 0, null));
  return { t, held, dropped, keep };
}

describe('near-cache entry table, resized', () => {
  it('keeps what it is told to, within the new bound, releasing the rest unjudged', () => {
    const { t, held, dropped, keep } = table(8);
    for (let id = 1; id <= 8; id++) keep(id);
    t.resize(2, (id) => id % 2 === 0);
    expect(t.limit).toBe(2);
    // The two most recently used of those kept: 6 and 8.
    expect([...held].sort()).toEqual([6, 8]);
    expect(t.size).toBe(2);
    expect(dropped).toEqual([]);
    t.resize(8, () => true);
    for (let id = 10; id < 20; id++) keep(id);
    expect(t.size).toBe(8);
  });

  it('ignores a use of an entry dropped meanwhile, and evicts as before', () => {
    const { t, keep } = table(4);
    for (let id = 1; id <= 4; id++) keep(id);
    const entry = t.get(3);
    t.resize(4, (id) => id !== 3);
    if (entry) t.used(entry);
    expect(t.has(3)).toBe(false);
    for (let id = 10; id < 20; id++) keep(id);
    expect(t.size).toBe(4);
    expect(t.oldest?.id).toBe(16);
  });
});
