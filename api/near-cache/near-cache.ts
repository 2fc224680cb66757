import type { ReadModelKeys } from '../../src/read-model/keys.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import type { ChangeSubscriber } from '../change-feed/change-subscriber.js';
import {
  ABSENT,
  type Access,
  type AppReads,
  type Read,
  type StoredDevices,
  type StoredFlow,
} from '../reader/api-reader.js';
import type { KeyGrant } from '../reader/key-access.js';
import { createAdmission } from './admission.js';
import { createEntryTable } from './entry-table.js';
import { createFill } from './fill.js';
import {
  devicesReadOf,
  type FillPart,
  Followed,
  type FollowedFlow,
  flowReadOf,
  holds,
  type Snapshot,
} from './snapshot.js';
import { createWarmBudget } from './warm-budget.js';
import { createWorth, SAMPLE_SHARE, sampled } from './worth.js';

// The near-cache: per installation, what the per-installation scripts read (the acl entries of
// the applications whose keys read it here, the stored flow with its validUntil, and the devices
// hash once a devices read or a stream needed it: a flow read keeps what the flow script
// answered), in a bounded LRU (entry-table.ts). An entry exists only while its installation's
// change channel is held, and was read only after that subscription was confirmed; any
// announcement empties it, and a read that raced one is not kept. An emptied entry keeps its
// place and its channel, so the next read is kept at once: a busy installation costs the API one
// message per write, not an unsubscribe, a subscribe and a second read to warm it again. That
// holds while it is read from memory between writes: an entry written twice with no hit between
// goes (its writes outpace its reads). An entry past its max age is a miss answered by the
// request's own read, and is read again off the request's path, like a new one (warm budget).
// When the subscriber's connection drops every entry goes (whatever happened meanwhile was not
// heard), and until it is back reads go to Redis uncached. The key itself is judged per request
// (key-access.ts), before the cache is asked. Time is evaluated per request: the key's expiry
// and the flow's validUntil against `now` (an expired flow is served recomputed from the cached
// devices, as the script path does).
//
// What a hit may reveal by timing: only a live key of an application the entry lists as allowed
// is served from memory, and it would get a 200 anyway. Every other answer (another
// application, an expired entry, a refusal) takes the uncached path, the same script whose nil
// answers "missing" and "not yours" alike. So a refused request costs the same whether
// or not someone else has the installation cached, and a missing and an inaccessible
// installation still take the same time (semantics.md).
//
// When the cache does not pay for itself in the pattern at hand (worth.ts), it steps out of the
// way: but for a sampled share of installations, a read goes to Redis as with the near-cache off
// (the same read, judged the same way), and the table holds that share's entries only, in as
// many entries as the share's part of the bound. The sample judges when to come back whole.

/** What a read of each part answers. */
export interface PartReads {
  readonly flow: StoredFlow;
  readonly devices: StoredDevices;
  /** The whole installation, so a stream can serve the flow at any later time. */
  readonly stream: FollowedFlow;
}
export type ReadPart = keyof PartReads;

export interface NearCache {
  /**
   * `part` of the installation as the key's application (its grant, judged already) may read it
   * at `nowMs`: from memory without a promise on a hit, else by one read, after which the cache
   * decides whether to keep the installation. A flow or devices miss is answered by the
   * uncached read the request needs, unless the installation's emptied entry was read for this
   * application (then its one read refills it); a stream's reads the whole installation.
   * `monotonicMs`: performance.now(), which a caller reading many ids may read once.
   */
  read<P extends ReadPart>(
    grant: KeyGrant,
    id: number,
    part: P,
    nowMs: number,
    monotonicMs?: number,
  ): Read<PartReads[P]>;
  readonly size: number;
  /** Counts since start, for the metrics (api/ops/near-cache-metrics.ts). */
  stats(): NearCacheStats;
  clear(): void;
}

export interface NearCacheStats {
  /** Lookups answered from memory, and those that went to Redis. */
  readonly hits: number;
  readonly misses: number;
  /** Installations kept after a miss (each a subscription and a read). */
  readonly warms: number;
  /** Installations let go because writes came faster than hits. */
  readonly released: number;
  /** Reads sent straight to Redis while the cache was out of the way (no lookup). */
  readonly bypassed: number;
  /** Whether it is out of the way now (worth.ts), and how often it stepped out and back. */
  readonly bypass: boolean;
  readonly stepsOut: number;
  readonly stepsBack: number;
  readonly entries: number;
  readonly bytes: number;
}

export function createNearCache(deps: {
  redis: RedisClient;
  keys: ReadModelKeys;
  subscriber: ChangeSubscriber;
  /** The uncached reads of a miss the cache does not refill. */
  reads: AppReads;
  /** Entries held at most; 0 reads through without keeping anything. */
  entries: number;
  /** Re-read an entry this old even if no announcement came (a bound on any missed one). */
  maxAgeMs: number;
  /** Bytes the entries hold at most (approximately), least recently used out first. */
  maxBytes: number;
  /** Lookups over which it judges whether it pays (worth.ts). */
  windowLookups: number;
}): NearCache {
  const { subscriber, reads } = deps;
  // How many installations may be newly kept a second: as many as repay it (warm-budget.ts).
  const budget = createWarmBudget({
    startMs: performance.now(),
    capacity: () => table.limit,
    maxAgeMs: deps.maxAgeMs,
    unpaid: () => worth.unpaid(),
  });
  const table = createEntryTable({
    subscriber,
    entries: deps.entries,
    maxBytes: deps.maxBytes,
    maxAgeMs: deps.maxAgeMs,
    dropped: (id) => budget.dropped(id),
  });
  const admission = createAdmission(table, deps.entries);
  const fill = createFill(deps);
  const counts = { hits: 0, misses: 0, warms: 0, released: 0, bypassed: 0 };
  const worth = createWorth({
    windowLookups: deps.windowLookups,
    // TinyLFU's sample period (frequency-sketch.ts ages its counts after ten per entry).
    graceLookups: 10 * deps.entries,
    full: () => table.full(),
    onStep(bypass) {
      // Out: only the sample's entries stay, in the sample's share of the bound. Back: the whole
      // bound, filled as misses are admitted. Pending judgements of the budget go: they were of
      // entries kept under the other bound.
      if (bypass) table.resize(Math.max(1, Math.ceil(deps.entries / SAMPLE_SHARE)), sampled);
      else table.resize(deps.entries, () => true);
      budget.clear();
    },
  });
  /** Whether the whole path (lookup, admission, keeping) runs for `id` now. */
  const followed = (id: number) => !worth.bypass || sampled(id);

  subscriber.on('change', (id) => {
    const entry = table.get(id);
    if (entry === undefined) return;
    // Written again before anyone read it from memory: its writes outpace its reads, and holding
    // it costs a message per write and a whole snapshot per refill for no hit. Let it go; the
    // admission takes it back if its reads pick up (and slows down if this keeps happening).
    if (!entry.used) {
      counts.released++;
      return table.drop(id);
    }
    table.empty(entry);
  });
  function clear(): void {
    table.clear();
    budget.clear();
  }
  subscriber.on('reset', clear);

  /** The snapshot of a hit for the application, holding `part` at `nowMs`; else undefined. */
  function hit(
    app: number,
    id: number,
    part: FillPart,
    nowMs: number,
    monotonicMs = performance.now(),
  ): Snapshot | undefined {
    admission.seen(id);
    const entry = table.get(id);
    const snapshot = entry?.snapshot;
    if (entry === undefined || !snapshot?.grants.has(app) || !holds(snapshot, part, nowMs)) {
      counts.misses++;
      worth.lookup(false);
      return undefined;
    }
    if (monotonicMs - entry.filledAt >= deps.maxAgeMs) {
      // Upkeep, not a verdict: entries kept together age out together, and a poll that fits the
      // cache then misses a whole round at once. What a refill costs is judged as any keep's.
      counts.misses++;
      return undefined;
    }
    counts.hits++;
    budget.hit(id);
    table.used(entry);
    // Last: judging may step out and drop this very entry (its snapshot still answers this read).
    worth.lookup(true);
    return snapshot;
  }

  /**
   * Whether the application's miss on `id` is best read through `refill`: its entry was emptied
   * by an announcement, its channel is still held, and it was read for the application, so that
   * one read refills it. Otherwise a miss is answered by the read the request needs, then
   * `consider`ed: what another application's key does never depends on what is cached here.
   */
  function covers(app: number, id: number): boolean {
    // Emptied only: one past its max age still holds a snapshot (see consider).
    const entry = table.get(id);
    return entry?.snapshot === null && entry.readFor.has(app) && subscriber.confirmed(id);
  }

  /**
   * After a miss the key's read answered: keeps the installation (off the request's path) if
   * it is asked for more often than the entry it would evict (TinyLFU admission). Kept already,
   * but missed: not for this application (read it for this one too, its grant is then merged
   * into the entry's), or past its max age (read again, off the request's path, as fast as the
   * warm budget allows: a poll wider than the cache comes back to an entry after its max age
   * with no hit between, and its whole snapshot read on the path cost more than the flow it
   * asked for).
   */
  function consider(grant: KeyGrant, id: number, nowMs: number, part: FillPart): void {
    const entry = table.get(id);
    const wanted =
      entry === undefined
        ? admission.admits(id)
        : entry.snapshot !== null || !entry.readFor.has(grant.app);
    if (wanted) worth.wanted();
    if (wanted && budget.take(performance.now(), table.full())) warm(grant.app, id, nowMs, part);
  }

  async function miss<T>(
    grant: KeyGrant,
    id: number,
    nowMs: number,
    part: FillPart,
    read: Promise<Access<T>>,
  ): Promise<Access<T>> {
    const result = await read;
    if (result.kind === 'ok') consider(grant, id, nowMs, part);
    return result;
  }

  /** One read of `part` for a key whose lookup missed, kept when it can be; null: absent. */
  async function refill(
    grant: KeyGrant,
    id: number,
    nowMs: number,
    part: FillPart,
  ): Promise<Snapshot | null> {
    // Sent while the channel is confirmed: any later write is announced, the read may be kept.
    const covered = deps.entries > 0 && subscriber.confirmed(id);
    const stamp = covered ? subscriber.stamp(id) : 0;
    const snapshot = await fill(grant.app, id, nowMs, covered, part);
    if (snapshot === null) return null;
    if (!followed(id)) return snapshot; // the cache stepped out meanwhile
    if (covered && subscriber.unchanged(id, stamp)) table.keep(id, snapshot);
    else if (admission.admits(id) && budget.take(performance.now(), table.full()))
      warm(grant.app, id, nowMs, part);
    return snapshot;
  }

  // Installations being warmed: subscribe, then read again, then keep (unless an announcement
  // or a reset came between). Off the request's path, and only after a read the key passed, so
  // a refusal costs the same whatever is cached or subscribed here.
  const warming = new Set<number>();
  function warm(app: number, id: number, nowMs: number, part: FillPart): void {
    if (warming.has(id) || !subscriber.ready) return;
    warming.add(id);
    void (async () => {
      try {
        if (!(await subscriber.hold(id))) return;
        const stamp = subscriber.stamp(id);
        const snapshot = await fill(app, id, nowMs, true, part);
        if (snapshot !== null && subscriber.unchanged(id, stamp) && followed(id)) {
          table.keep(id, snapshot);
          budget.kept(id, performance.now());
          counts.warms++;
        }
      } finally {
        subscriber.release(id);
        warming.delete(id);
      }
    })().catch(() => undefined);
  }

  function flow(
    grant: KeyGrant,
    id: number,
    nowMs: number,
    monotonicMs?: number,
  ): Read<StoredFlow> {
    const snapshot = hit(grant.app, id, 'flow', nowMs, monotonicMs);
    if (snapshot !== undefined) return flowReadOf(snapshot, nowMs);
    if (!covers(grant.app, id))
      return miss(grant, id, nowMs, 'flow', reads.flowOf(grant.app, id, nowMs));
    return refill(grant, id, nowMs, 'flow').then((s) =>
      s === null ? ABSENT : flowReadOf(s, nowMs),
    );
  }

  function devices(grant: KeyGrant, id: number, nowMs: number): Read<StoredDevices> {
    const devicesRead = hit(grant.app, id, 'all', nowMs)?.devicesRead;
    if (devicesRead) return devicesRead;
    if (!covers(grant.app, id))
      return miss(grant, id, nowMs, 'all', reads.devicesOf(grant.app, id, nowMs));
    return refill(grant, id, nowMs, 'all').then((s) => (s === null ? ABSENT : devicesReadOf(s)));
  }

  // Streams: the whole snapshot, so the flow can be recomputed at any later time.
  async function stream(grant: KeyGrant, id: number, nowMs: number): Promise<Access<FollowedFlow>> {
    return followedOf(
      grant,
      hit(grant.app, id, 'all', nowMs) ?? (await refill(grant, id, nowMs, 'all')),
    );
  }
  const followedOf = (grant: KeyGrant, snapshot: Snapshot | null): Access<FollowedFlow> =>
    snapshot === null ? ABSENT : { kind: 'ok', value: new Followed(grant.expiresAtMs, snapshot) };

  /** A read while the cache is out of the way, for an installation outside the sample. */
  function direct(grant: KeyGrant, id: number, part: ReadPart, nowMs: number): Read<unknown> {
    counts.bypassed++;
    if (part === 'flow') return reads.flowOf(grant.app, id, nowMs);
    if (part === 'devices') return reads.devicesOf(grant.app, id, nowMs);
    return fill(grant.app, id, nowMs, false, 'all').then((snapshot) => followedOf(grant, snapshot));
  }

  return {
    get size() {
      return table.size;
    },
    stats: () => ({
      ...counts,
      bypass: worth.bypass,
      stepsOut: worth.steps.out,
      stepsBack: worth.steps.back,
      entries: table.size,
      bytes: table.bytes,
    }),
    clear,
    read<P extends ReadPart>(
      grant: KeyGrant,
      id: number,
      part: P,
      nowMs: number,
      monotonicMs?: number,
    ): Read<PartReads[P]> {
      if (!followed(id)) return direct(grant, id, part, nowMs) as Read<PartReads[P]>;
      if (part === 'flow') return flow(grant, id, nowMs, monotonicMs) as Read<PartReads[P]>;
      if (part === 'devices') return devices(grant, id, nowMs) as Read<PartReads[P]>;
      return stream(grant, id, nowMs) as Read<PartReads[P]>;
    },
  };
}
