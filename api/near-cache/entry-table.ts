import type { ChangeSubscriber } from '../change-feed/change-subscriber.js';
import { createRecency, type Linked } from './recency.js';
import type { Snapshot } from './snapshot.js';

// The near-cache's entries, bounded in count and bytes, least recently used out first. An entry
// exists only while its installation's change channel is held: keeping a new one holds it,
// dropping one releases it. An entry emptied by an announcement keeps its place and its channel.

export interface Entry extends Linked {
  readonly id: number;
  /** Null once an announcement emptied it: its channel is still held. */
  snapshot: Snapshot | null;
  /**
   * The applications it was last read for (kept when emptied): only their keys refill it with
   * one read; any other key's miss takes the path of an installation not cached at all.
   */
  readFor: ReadonlySet<number>;
  filledAt: number;
  /** What the snapshot holds, approximately (sizeOf). */
  bytes: number;
  /** Served from memory since it was filled (or emptied). */
  used: boolean;
}

export interface EntryTable {
  get(id: number): Entry | undefined;
  has(id: number): boolean;
  readonly size: number;
  readonly bytes: number;
  /** Whether keeping one more would evict another. */
  full(): boolean;
  /** The least recently used entry, next to go; null when empty. */
  readonly oldest: Entry | null;
  /** `entry` was served from memory: now the most recently used. */
  used(entry: Entry): void;
  /** Keeps `snapshot` for `id`, in its entry (refilled) or a new one; evicts beyond the bounds. */
  keep(id: number, snapshot: Snapshot): void;
  /** Empties the entry in place: it keeps its place in the recency order, and its channel. */
  empty(entry: Entry): void;
  drop(id: number): void;
  /**
   * Holds `entries` at most from now on, keeping only those `keep` names (the rest, and the least
   * recently used beyond the bound, go without being judged: the bound moved, not their worth).
   */
  resize(entries: number, keep: (id: number) => boolean): void;
  /** Entries held at most, now. */
  readonly limit: number;
  clear(): void;
}

// Beyond the stored bytes: the entry, its maps and the memo's objects, roughly.
const ENTRY_OVERHEAD_BYTES = 400;

export function createEntryTable(deps: {
  subscriber: Pick<ChangeSubscriber, 'hold' | 'release'>;
  entries: number;
  maxBytes: number;
  maxAgeMs: number;
  /** `id`'s entry went (evicted or released; not on clear). */
  dropped(id: number): void;
}): EntryTable {
  const { subscriber } = deps;
  const byId = new Map<number, Entry>();
  const recency = createRecency<Entry>();
  let bytes = 0;
  let limit = deps.entries;

  function drop(id: number, judged = true): void {
    const entry = byId.get(id);
    if (entry === undefined) return;
    if (judged) deps.dropped(id);
    bytes -= entry.bytes;
    byId.delete(id);
    recency.remove(entry);
    subscriber.release(id);
  }

  function keep(id: number, snapshot: Snapshot): void {
    const old = byId.get(id);
    if (old?.snapshot && performance.now() - old.filledAt < deps.maxAgeMs) {
      // Both were read with no announcement since: the other applications' grants still hold.
      for (const app of old.snapshot.grants) snapshot.grants.add(app);
    }
    const size = sizeOf(snapshot);
    const filledAt = performance.now();
    if (old) {
      bytes -= old.bytes;
      old.snapshot = snapshot;
      old.readFor = snapshot.grants;
      old.filledAt = filledAt;
      old.bytes = size;
      old.used = false;
      recency.touch(old);
    } else {
      void subscriber.hold(id);
      const entry: Entry = {
        id,
        snapshot,
        readFor: snapshot.grants,
        filledAt,
        bytes: size,
        used: false,
        older: null,
        newer: null,
      };
      byId.set(id, entry);
      recency.add(entry);
    }
    bytes += size;
    while (byId.size > limit || (bytes > deps.maxBytes && byId.size > 1))
      drop((recency.oldest as Entry).id);
  }

  return {
    get: (id) => byId.get(id),
    has: (id) => byId.has(id),
    get size() {
      return byId.size;
    },
    get bytes() {
      return bytes;
    },
    full: () => byId.size >= limit || bytes >= deps.maxBytes,
    get oldest() {
      return recency.oldest;
    },
    used(entry) {
      // Only an entry still held: touching one dropped meanwhile would relink it into the order.
      if (byId.get(entry.id) !== entry) return;
      entry.used = true;
      recency.touch(entry);
    },
    keep,
    empty(entry) {
      bytes -= entry.bytes;
      entry.snapshot = null;
      entry.filledAt = 0;
      entry.bytes = 0;
      entry.used = false;
    },
    drop: (id) => drop(id),
    resize(entries, keep) {
      limit = entries;
      for (const id of [...byId.keys()]) if (!keep(id)) drop(id, false);
      while (byId.size > limit) drop((recency.oldest as Entry).id, false);
    },
    get limit() {
      return limit;
    },
    clear() {
      for (const id of byId.keys()) subscriber.release(id);
      byId.clear();
      recency.clear();
      bytes = 0;
    },
  };
}

/**
 * The bytes a snapshot keeps, roughly: its stored values, the answers built from them (memo: a
 * body is about as large as the bytes it is built from) and a fixed overhead.
 */
function sizeOf(snapshot: Snapshot): number {
  let stored = snapshot.flowData.length;
  for (const b of snapshot.devices ?? []) stored += b.length;
  return ENTRY_OVERHEAD_BYTES + 2 * stored;
}
