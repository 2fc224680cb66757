// The conditional-request cache: per request (URL) the last 200's body with its ETag, sent back
// as If-None-Match so an unchanged answer costs a 304 (no body, a tenth of a quota unit).
// Bounded by entries and by approximate bytes, least recently used out first (a Map keeps
// insertion order; a hit moves its entry to the end).

export interface CacheEntry {
  readonly etag: string;
  readonly body: unknown;
  readonly lastModified: Date | null;
  /** Approximate memory: the body's text length. */
  readonly size: number;
}

export interface CacheLimits {
  /** Entries at most (one per distinct request). */
  readonly maxEntries: number;
  /** Sum of the cached bodies' text lengths at most, characters (about bytes for JSON). */
  readonly maxBytes: number;
}

export const DEFAULT_CACHE_LIMITS: CacheLimits = {
  maxEntries: 2_000,
  maxBytes: 32 * 1024 * 1024, // 32 MiB
};

export class EtagCache {
  private readonly entries = new Map<string, CacheEntry>();
  private bytes = 0;

  constructor(private readonly limits: CacheLimits = DEFAULT_CACHE_LIMITS) {}

  get size(): number {
    return this.entries.size;
  }

  /** The entry of `key`, marked as recently used. */
  get(key: string): CacheEntry | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry;
  }

  set(key: string, entry: CacheEntry): void {
    this.delete(key);
    // A body larger than the whole budget would only evict everything else.
    if (entry.size > this.limits.maxBytes || this.limits.maxEntries <= 0) return;
    this.entries.set(key, entry);
    this.bytes += entry.size;
    for (const [oldest, old] of this.entries) {
      if (this.entries.size <= this.limits.maxEntries && this.bytes <= this.limits.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= old.size;
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.bytes -= entry.size;
  }

  clear(): void {
    this.entries.clear();
    this.bytes = 0;
  }
}
