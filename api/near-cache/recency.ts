// Least recently used first, as a list through the cached values themselves: a use moves two
// links. A Map kept in recency order (delete and set again on each use) leaves a hole per move
// and per eviction until V8 compacts it, and finding its first key walks past every hole: at
// 10,000 entries, microseconds per lookup once thousands have piled up at the front.

/** What a value needs to be in a recency list: its links, owned by the list. */
export interface Linked {
  older: Linked | null;
  newer: Linked | null;
}

export interface Recency<T extends Linked> {
  /** The least recently used, next to go. */
  readonly oldest: T | null;
  /** Appends `node`, not in the list, as the most recently used. */
  add(node: T): void;
  /** `node`, in the list, is now the most recently used. */
  touch(node: T): void;
  remove(node: T): void;
  clear(): void;
}

export function createRecency<T extends Linked>(): Recency<T> {
  let oldest: Linked | null = null;
  let newest: Linked | null = null;
  function add(node: Linked): void {
    node.older = newest;
    node.newer = null;
    if (newest === null) oldest = node;
    else newest.newer = node;
    newest = node;
  }
  function remove(node: Linked): void {
    if (node.older === null) oldest = node.newer;
    else node.older.newer = node.newer;
    if (node.newer === null) newest = node.older;
    else node.newer.older = node.older;
    node.older = null;
    node.newer = null;
  }
  return {
    get oldest() {
      return oldest as T | null;
    },
    add,
    touch(node) {
      if (node === newest) return;
      remove(node);
      add(node);
    },
    remove,
    clear() {
      oldest = null;
      newest = null;
    },
  };
}
