import type { ReadModelKeys } from '../../src/read-model/keys.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import {
  ABSENT,
  type Access,
  type ApiReader,
  type AppReads,
  type Memo,
  type StoredDevices,
  type StoredFlow,
  UNAUTHORIZED,
  withGrant,
} from './api-reader.js';
import { flowScriptKeys } from './api-scripts.js';
import type { ChangeSubscriber } from './change-subscriber.js';
import { createFrequencySketch } from './frequency-sketch.js';
import type { KeyAccess, KeyGrant } from './key-access.js';
import { packed } from './packed.js';
import { createRecency, type Linked } from './recency.js';
import { slotRouter } from './slot-router.js';
import type { ViewCache } from './view-cache.js';
import { createWarmBudget } from './warm-budget.js';

// The near-cache: per installation, what the per-installation scripts read (the acl entries of
// the applications whose keys read it here, the stored flow with its validUntil, and the devices
// hash once a devices read or a stream needed it: a flow read keeps what the flow script
// answered), in a bounded LRU. An entry exists only while its installation's change channel is held, and was
// read only after that subscription was confirmed; any announcement empties it, and a read that
// raced one is not kept. An emptied entry keeps its place and its channel, so the next read is
// kept at once: a busy installation costs the API one message per write, not an unsubscribe, a
// subscribe and a second read to warm it again. That holds while it is read from memory between
// writes: an entry written twice with no hit between goes (its writes outpace its reads). Emptied
// entries go in LRU order like the others. An entry past its max age is a miss answered by the
// request's own read, and is read again off the request's path, like a new one (warm budget).
// When the subscriber's connection drops every entry goes (whatever happened meanwhile was not
// heard), and until it is back reads go to Redis uncached. The key itself is judged per request
// (key-access.ts), before the entry is looked at. Time is evaluated per request: the key's
// expiry and the flow's validUntil against `now` (an expired flow is served recomputed from
// the cached devices, as the script path does).
//
// What a hit may reveal by timing: only a live key of an application the entry lists as allowed
// is served from memory, and it would get a 200 anyway. Every other answer (another
// application, an expired entry, a refusal) takes the uncached path, the same script whose nil
// answers "missing" and "not yours" alike. So a refused request costs the same whether
// or not someone else has the installation cached, and a missing and an inaccessible
// installation still take the same time (semantics.md).

/** What the cache holds of one installation. */
export interface Snapshot {
  /** The applications allowed to read it: only those whose keys read it through here. */
  readonly grants: Set<number>;
  readonly flowData: string;
  readonly validUntilMs: number;
  /**
   * The devices hash, flat field/value pairs of stored bytes; null when it was read for a flow
   * that was valid then (the flow script's reply, a few hundred bytes where the devices are
   * kilobytes): a devices read, or the flow once past validUntil, is then a miss.
   */
  readonly devices: readonly Buffer[] | null;
  /** Answers built from these bytes, kept as long as the snapshot is. */
  readonly memo: Memo;
  /** The flow read as served until validUntil, built once: a hit allocates nothing for it. */
  readonly fresh: { readonly kind: 'ok'; readonly value: StoredFlow };
  /** The devices read, likewise (null without the devices). */
  readonly devicesRead: { readonly kind: 'ok'; readonly value: StoredDevices } | null;
}

/** What a read needs of an entry: the flow (and the devices only past validUntil), or all. */
export type Part = 'flow' | 'all';

export interface InstallationRead {
  /** The key's expiry (epoch ms, null = never). */
  readonly keyExpiresAtMs: number | null;
  readonly snapshot: Snapshot;
}

export interface NearCache {
  /** The installation as the key may read it now: cached, or read (and cached when it can be). */
  read(keyHash: string, id: number, nowMs: number): Promise<Access<InstallationRead>>;
  /**
   * `read` for a key already judged (its grant) whose `peek` missed: one read of `part`, kept
   * when it can be. Not looked up again, so a lookup counts once (frequency sketch, metrics).
   */
  refill(grant: KeyGrant, id: number, nowMs: number, part: Part): Promise<Access<InstallationRead>>;
  /**
   * Whether the application's miss on `id` is best read through `refill`: its entry was
   * emptied by an announcement, its channel is still held, and it was read for the
   * application, so that one read refills it. Otherwise a miss is answered by the read the
   * request needs, then `consider`ed: what another application's key does never depends on
   * what is cached here.
   */
  covers(app: number, id: number): boolean;
  /**
   * After a miss the key's read answered: keeps the installation (off the request's path) if
   * it is asked for more often than the entry it would evict (TinyLFU admission).
   */
  consider(grant: KeyGrant, id: number, nowMs: number, part: Part): void;
  /**
   * The snapshot of a hit for the application, holding `part` at `nowMs`, without a promise;
   * undefined when it must be read. `monotonicMs`: performance.now(), which a caller peeking
   * many ids may read once.
   */
  peek(
    app: number,
    id: number,
    part: Part,
    nowMs: number,
    monotonicMs?: number,
  ): Snapshot | undefined;
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
  readonly entries: number;
  readonly bytes: number;
}

interface Entry extends Linked {
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

// Beyond the stored bytes: the entry, its maps and the memo's objects, roughly.
const ENTRY_OVERHEAD_BYTES = 400;
const MIN_FREQUENCY = 3;

export function createNearCache(deps: {
  redis: RedisClient;
  keys: ReadModelKeys;
  subscriber: ChangeSubscriber;
  /** Entries held at most; 0 reads through without keeping anything. */
  entries: number;
  /** Re-read an entry this old even if no announcement came (a bound on any missed one). */
  maxAgeMs: number;
  /** Bytes the entries hold at most (approximately), least recently used out first. */
  maxBytes: number;
  /** Judges the key, as the uncached reader does. */
  access: KeyAccess;
}): NearCache {
  const sendTo = slotRouter(deps.redis);
  const { keys, subscriber } = deps;
  const byId = new Map<number, Entry>();
  const recency = createRecency<Entry>();
  const sketch = createFrequencySketch(deps.entries);
  let bytes = 0;
  // How many installations may be newly kept a second: as many as repay it (warm-budget.ts).
  const budget = createWarmBudget({
    startMs: performance.now(),
    capacity: deps.entries,
    maxAgeMs: deps.maxAgeMs,
  });
  const counts = { hits: 0, misses: 0, warms: 0, released: 0 };

  function drop(id: number): void {
    const entry = byId.get(id);
    if (entry === undefined) return;
    budget.dropped(id);
    bytes -= entry.bytes;
    byId.delete(id);
    recency.remove(entry);
    subscriber.release(id);
  }
  subscriber.on('change', (id) => {
    const entry = byId.get(id);
    if (entry === undefined) return;
    // Written again before anyone read it from memory: its writes outpace its reads, and holding
    // it costs a message per write and a whole snapshot per refill for no hit. Let it go; the
    // admission takes it back if its reads pick up (and slows down if this keeps happening).
    if (!entry.used) {
      counts.released++;
      return drop(id);
    }
    // Emptied in place: it keeps its place in the recency order, and its channel.
    bytes -= entry.bytes;
    entry.snapshot = null;
    entry.filledAt = 0;
    entry.bytes = 0;
    entry.used = false;
  });
  function clear(): void {
    for (const id of byId.keys()) subscriber.release(id);
    byId.clear();
    recency.clear();
    budget.clear();
    bytes = 0;
  }
  subscriber.on('reset', clear);

  const full = () => byId.size >= deps.entries || bytes >= deps.maxBytes;

  /** TinyLFU: a candidate is kept while there is room, else only over the entry it evicts. */
  function admits(id: number): boolean {
    if (deps.entries === 0 || byId.has(id)) return false;
    const frequency = sketch.frequency(id);
    // Keeping costs a subscription and a read of the whole snapshot (several reads' worth):
    // an installation asked for less than thrice lately would not repay it (a sweep, a poll
    // wider than the cache).
    if (frequency < MIN_FREQUENCY) return false;
    if (!full()) return true;
    return frequency > sketch.frequency((recency.oldest as Entry).id);
  }

  /**
   * The installation's snapshot: for a flow, what the flow script reads (the devices only past
   * validUntil); else everything. `kept`: copied out of the reply's socket chunk (packed.ts).
   */
  async function fill(
    app: number,
    id: number,
    nowMs: number,
    kept: boolean,
    part: Part,
  ): Promise<Snapshot | null> {
    const read = flowScriptKeys(keys, id);
    const reply = await sendTo(read[0], (redis) =>
      part === 'flow'
        ? redis.apiReadFlowBuffer(...read, app, nowMs)
        : redis.apiReadSnapshotBuffer(...read, app, nowMs),
    );
    if (reply === null) return null;
    // The snapshot script answers the acl entry first; the flow script does not.
    const [data, validUntil, ...stored] = (part === 'flow' ? reply : reply.slice(1)) as Buffer[];
    const validUntilMs = Number(String(validUntil));
    const withDevices = part === 'all' || (validUntilMs !== 0 && validUntilMs < nowMs);
    const devices = !withDevices ? null : kept ? packed(stored) : stored;
    const flowData = String(data);
    const memo: Memo = { flow: null, flowPart: null, devices: null };
    return {
      grants: new Set([app]),
      flowData,
      validUntilMs,
      devices,
      memo,
      fresh: { kind: 'ok', value: { data: flowData, validUntilMs, devices: null, memo } },
      devicesRead: devices && { kind: 'ok', value: { pairs: devices, memo } },
    };
  }

  // Installations being warmed: subscribe, then read again, then keep (unless an announcement
  // or a reset came between). Off the request's path, and only after a read the key passed, so
  // a refusal costs the same whatever is cached or subscribed here.
  const warming = new Set<number>();
  function warm(app: number, id: number, nowMs: number, part: Part): void {
    if (warming.has(id) || !subscriber.ready) return;
    warming.add(id);
    void (async () => {
      try {
        if (!(await subscriber.hold(id))) return;
        const stamp = subscriber.stamp(id);
        const snapshot = await fill(app, id, nowMs, true, part);
        if (snapshot !== null && subscriber.unchanged(id, stamp)) {
          keep(id, snapshot);
          budget.kept(id, performance.now());
          counts.warms++;
        }
      } finally {
        subscriber.release(id);
        warming.delete(id);
      }
    })().catch(() => undefined);
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
    while (byId.size > deps.entries || (bytes > deps.maxBytes && byId.size > 1))
      drop((recency.oldest as Entry).id);
  }

  function hit(
    app: number,
    id: number,
    part: Part,
    nowMs: number,
    monotonicMs = performance.now(),
  ): Snapshot | undefined {
    sketch.increment(id);
    const entry = byId.get(id);
    const snapshot = entry?.snapshot;
    if (
      entry === undefined ||
      !snapshot?.grants.has(app) ||
      monotonicMs - entry.filledAt >= deps.maxAgeMs ||
      !holds(snapshot, part, nowMs)
    ) {
      counts.misses++;
      return undefined;
    }
    counts.hits++;
    budget.hit(id);
    entry.used = true;
    recency.touch(entry);
    return snapshot;
  }

  return {
    get size() {
      return byId.size;
    },
    stats: () => ({ ...counts, entries: byId.size, bytes }),
    clear,
    covers(app, id) {
      // Emptied only: one past its max age still holds a snapshot (see consider).
      const entry = byId.get(id);
      return entry?.snapshot === null && entry.readFor.has(app) && subscriber.confirmed(id);
    },
    consider(grant, id, nowMs, part) {
      // Kept already, but missed: not for this application (read it for this one too, its grant
      // is then merged into the entry's), or past its max age (read again, off the request's
      // path, as fast as the warm budget allows: a poll wider than the cache comes back to an
      // entry after its max age with no hit between, and its whole snapshot read on the path
      // cost more than the flow it asked for). Else the admission decides.
      const entry = byId.get(id);
      const wanted =
        entry === undefined ? admits(id) : entry.snapshot !== null || !entry.readFor.has(grant.app);
      if (wanted && budget.take(performance.now(), full())) warm(grant.app, id, nowMs, part);
    },
    peek: hit,
    refill,
    async read(keyHash, id, nowMs) {
      const grant = await deps.access.resolve(keyHash, nowMs);
      if (grant === null) return UNAUTHORIZED;
      // Streams: the whole snapshot, so the flow can be recomputed at any later time.
      const cached = hit(grant.app, id, 'all', nowMs);
      if (cached === undefined) return refill(grant, id, nowMs, 'all');
      return { kind: 'ok', value: { keyExpiresAtMs: grant.expiresAtMs, snapshot: cached } };
    },
  };

  async function refill(
    grant: KeyGrant,
    id: number,
    nowMs: number,
    part: Part,
  ): Promise<Access<InstallationRead>> {
    const keyExpiresAtMs = grant.expiresAtMs;
    // Sent while the channel is confirmed: any later write is announced, the read may be kept.
    const covered = deps.entries > 0 && subscriber.confirmed(id);
    const stamp = covered ? subscriber.stamp(id) : 0;
    const snapshot = await fill(grant.app, id, nowMs, covered, part);
    if (snapshot === null) return ABSENT;
    if (covered && subscriber.unchanged(id, stamp)) keep(id, snapshot);
    else if (admits(id) && budget.take(performance.now(), full())) warm(grant.app, id, nowMs, part);
    return { kind: 'ok', value: { keyExpiresAtMs, snapshot } };
  }
}

/**
 * The reads of `base` served through the caches: devices and flow here, views there. The key
 * is judged once per request (from memory, see key-access.ts). A miss is answered by `base`'s
 * own read for the request (a flow by the flow script), one read and no more, unless the
 * near-cache holds the installation's channel already (then its one read refills the entry);
 * the near-cache then decides whether to keep the installation.
 */
export function cachedReader(
  base: ApiReader & AppReads,
  access: KeyAccess,
  cache: NearCache,
  views: ViewCache,
): ApiReader {
  async function miss<T>(
    grant: KeyGrant,
    id: number,
    nowMs: number,
    part: Part,
    read: Promise<Access<T>>,
  ): Promise<Access<T>> {
    const result = await read;
    if (result.kind === 'ok') cache.consider(grant, id, nowMs, part);
    return result;
  }
  function flowOf(grant: KeyGrant, id: number, nowMs: number, monotonicMs?: number) {
    const snapshot = cache.peek(grant.app, id, 'flow', nowMs, monotonicMs);
    if (snapshot !== undefined) return flowReadOf(snapshot, nowMs);
    if (!cache.covers(grant.app, id))
      return miss(grant, id, nowMs, 'flow', base.flowOf(grant.app, id, nowMs));
    return cache
      .refill(grant, id, nowMs, 'flow')
      .then((r) => (r.kind === 'ok' ? flowReadOf(r.value.snapshot, nowMs) : r));
  }
  return {
    keyLive: base.keyLive,
    installations: views.installations,
    viewPage: views.viewPage,
    // A hit answers without a promise: the route then answers in the same turn.
    devices(keyHash, id, nowMs) {
      return withGrant(access, keyHash, nowMs, (grant) => {
        const devicesRead = cache.peek(grant.app, id, 'all', nowMs)?.devicesRead;
        if (devicesRead) return devicesRead;
        if (!cache.covers(grant.app, id))
          return miss(grant, id, nowMs, 'all', base.devicesOf(grant.app, id, nowMs));
        return cache
          .refill(grant, id, nowMs, 'all')
          .then((r) => (r.kind === 'ok' ? devicesReadOf(r.value.snapshot) : r));
      });
    },
    async flows(keyHash, ids, nowMs) {
      const grant = access.peek(keyHash, nowMs) ?? (await access.resolve(keyHash, nowMs));
      if (grant === null) return ids.map(() => UNAUTHORIZED);
      // Hits from memory without a promise or an object each; misses as single reads, issued
      // together.
      const out: Array<Access<StoredFlow> | Promise<Access<StoredFlow>>> = new Array(ids.length);
      let misses = false;
      const monotonicMs = performance.now();
      for (let i = 0; i < ids.length; i++) {
        out[i] = flowOf(grant, ids[i] as number, nowMs, monotonicMs);
        if (out[i] instanceof Promise) misses = true;
      }
      return misses ? Promise.all(out) : (out as Access<StoredFlow>[]);
    },
    flow(keyHash, id, nowMs) {
      return withGrant(access, keyHash, nowMs, (grant) => flowOf(grant, id, nowMs));
    },
  };
}

/** The flow read of a snapshot: the one built with it while validUntil holds. */
function flowReadOf(snapshot: Snapshot, nowMs: number): Access<StoredFlow> {
  const value = storedFlowOf(snapshot, nowMs);
  return value === snapshot.fresh.value ? snapshot.fresh : { kind: 'ok', value };
}

/** The flow as the flow script answers it: with the devices only once validUntil has passed. */
export function storedFlowOf(snapshot: Snapshot, nowMs: number): StoredFlow {
  const { validUntilMs } = snapshot;
  if (validUntilMs === 0 || validUntilMs >= nowMs) return snapshot.fresh.value;
  return {
    data: snapshot.flowData,
    validUntilMs,
    // Cold path (until the consumers' sweep rewrites the flow): decode as the script path does.
    // A snapshot without its devices is never served past validUntil (hit), nor to streams.
    devices: (snapshot.devices ?? []).map(String),
    memo: snapshot.memo,
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

/** Whether the snapshot answers a read of `part` at `nowMs` (see Snapshot.devices). */
function holds(snapshot: Snapshot, part: Part, nowMs: number): boolean {
  if (snapshot.devices !== null) return true;
  const { validUntilMs } = snapshot;
  return part === 'flow' && (validUntilMs === 0 || validUntilMs >= nowMs);
}

/** The devices read of a snapshot read for them (a fill of 'all' always holds its devices). */
function devicesReadOf(snapshot: Snapshot): Access<StoredDevices> {
  return snapshot.devicesRead ?? ABSENT;
}
