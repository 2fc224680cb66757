import type { ReadModelKeys } from '../../src/read-model/keys.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import {
  ABSENT,
  type Access,
  type ApiReader,
  type Memo,
  type StoredDevices,
  type StoredFlow,
  UNAUTHORIZED,
} from './api-reader.js';
import { flowScriptKeys } from './api-scripts.js';
import type { ChangeSubscriber } from './change-subscriber.js';
import type { KeyAccess, KeyGrant } from './key-access.js';
import { slotRouter } from './slot-router.js';
import type { ViewCache } from './view-cache.js';

// The near-cache: per installation, what the per-installation scripts read (the acl entries of
// the applications whose keys read it here, the stored flow with its validUntil, the devices
// hash), in a bounded LRU. An entry exists only while its installation's change channel is held, and was
// read only after that subscription was confirmed; any announcement empties it, and a read that
// raced one is not kept. An emptied entry keeps its place and its channel, so the next read is
// kept at once: a busy installation costs the API one message per write, not an unsubscribe, a
// subscribe and a second read to warm it again. Emptied entries go in LRU order like the others.
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
  /** The devices hash, flat field/value pairs of stored bytes. */
  readonly devices: readonly Buffer[];
  /** Answers built from these bytes, kept as long as the snapshot is. */
  readonly memo: Memo;
  /** The flow read as served until validUntil, built once: a hit allocates nothing for it. */
  readonly fresh: { readonly kind: 'ok'; readonly value: StoredFlow };
  /** The devices read, likewise. */
  readonly devicesRead: { readonly kind: 'ok'; readonly value: StoredDevices };
}

export interface InstallationRead {
  /** The key's expiry (epoch ms, 0 = never). */
  readonly keyExpiresAtMs: number;
  readonly snapshot: Snapshot;
}

export interface NearCache {
  /** The installation as the key may read it now: cached, or read (and cached when it can be). */
  read(keyHash: string, id: number, nowMs: number): Promise<Access<InstallationRead>>;
  /**
   * The snapshot of a hit, without a promise; undefined when `read` must go to Redis.
   * `monotonicMs`: performance.now(), which a caller peeking many ids may read once.
   */
  peek(keyHash: string, id: number, nowMs: number, monotonicMs?: number): Snapshot | undefined;
  readonly size: number;
  clear(): void;
}

interface Entry {
  /** Null once an announcement emptied it: its channel is still held. */
  readonly snapshot: Snapshot | null;
  readonly filledAt: number;
}

const EMPTIED: Entry = { snapshot: null, filledAt: 0 };

export function createNearCache(deps: {
  redis: RedisClient;
  keys: ReadModelKeys;
  subscriber: ChangeSubscriber;
  /** Entries held at most; 0 reads through without keeping anything. */
  entries: number;
  /** Re-read an entry this old even if no announcement came (a bound on any missed one). */
  maxAgeMs: number;
  /** Judges the key, as the uncached reader does. */
  access: KeyAccess;
}): NearCache {
  const sendTo = slotRouter(deps.redis);
  const { keys, subscriber } = deps;
  // Map order is insertion order: re-inserting on a hit makes the first key the least recent.
  const lru = new Map<number, Entry>();

  function drop(id: number): void {
    if (lru.delete(id)) subscriber.release(id);
  }
  // Map.set on a present key keeps its place in the LRU order.
  subscriber.on('change', (id) => {
    if (lru.has(id)) lru.set(id, EMPTIED);
  });
  subscriber.on('reset', () => {
    for (const id of lru.keys()) subscriber.release(id);
    lru.clear();
  });

  async function fill(app: number, id: number, nowMs: number): Promise<Snapshot | null> {
    const read = flowScriptKeys(keys, id);
    const reply = await sendTo(read[0], (redis) =>
      redis.apiReadSnapshotBuffer(...read, app, nowMs),
    );
    if (reply === null) return null;
    const [, data, validUntil, ...devices] = reply as Buffer[];
    const flowData = String(data);
    const validUntilMs = Number(String(validUntil));
    const memo: Memo = { flow: null, flowPart: null, devices: null };
    return {
      grants: new Set([app]),
      flowData,
      validUntilMs,
      devices,
      memo,
      fresh: { kind: 'ok', value: { data: flowData, validUntilMs, devices: null, memo } },
      devicesRead: { kind: 'ok', value: { pairs: devices, memo } },
    };
  }

  // Installations being warmed: subscribe, then read again, then keep (unless an announcement
  // or a reset came between). Off the request's path, and only after a read the key passed, so
  // a refusal costs the same whatever is cached or subscribed here.
  const warming = new Set<number>();
  function warm(app: number, id: number, nowMs: number): void {
    if (warming.has(id) || !subscriber.ready) return;
    warming.add(id);
    void (async () => {
      try {
        if (!(await subscriber.hold(id))) return;
        const stamp = subscriber.stamp(id);
        const snapshot = await fill(app, id, nowMs);
        if (snapshot !== null && subscriber.unchanged(id, stamp)) keep(id, snapshot);
      } finally {
        subscriber.release(id);
        warming.delete(id);
      }
    })().catch(() => undefined);
  }

  function keep(id: number, snapshot: Snapshot): void {
    const old = lru.get(id);
    if (old?.snapshot && performance.now() - old.filledAt < deps.maxAgeMs) {
      // Both were read with no announcement since: the other applications' grants still hold.
      for (const app of old.snapshot.grants) snapshot.grants.add(app);
    }
    if (old) lru.delete(id);
    else void subscriber.hold(id);
    lru.set(id, { snapshot, filledAt: performance.now() });
    if (lru.size > deps.entries) drop(lru.keys().next().value as number);
  }

  function hit(app: number, id: number, monotonicMs = performance.now()): Snapshot | undefined {
    const entry = lru.get(id);
    if (!entry?.snapshot) return undefined;
    if (!entry.snapshot.grants.has(app)) return undefined;
    if (monotonicMs - entry.filledAt >= deps.maxAgeMs) return undefined;
    lru.delete(id);
    lru.set(id, entry);
    return entry.snapshot;
  }

  return {
    get size() {
      return lru.size;
    },
    clear() {
      for (const id of lru.keys()) subscriber.release(id);
      lru.clear();
    },
    peek(keyHash, id, nowMs, monotonicMs) {
      const grant = deps.access.peek(keyHash, nowMs);
      return grant ? hit(grant.app, id, monotonicMs) : undefined;
    },
    async read(keyHash, id, nowMs) {
      const grant = await deps.access.resolve(keyHash, nowMs);
      if (grant === null) return UNAUTHORIZED;
      return readGranted(grant, id, nowMs);
    },
  };

  async function readGranted(
    grant: KeyGrant,
    id: number,
    nowMs: number,
  ): Promise<Access<InstallationRead>> {
    const keyExpiresAtMs = grant.expiresAtMs;
    const cached = hit(grant.app, id);
    if (cached !== undefined) return { kind: 'ok', value: { keyExpiresAtMs, snapshot: cached } };
    // Sent while the channel is confirmed: any later write is announced, the read may be kept.
    const covered = deps.entries > 0 && subscriber.confirmed(id);
    const stamp = covered ? subscriber.stamp(id) : 0;
    const snapshot = await fill(grant.app, id, nowMs);
    if (snapshot === null) return ABSENT;
    if (covered && subscriber.unchanged(id, stamp)) keep(id, snapshot);
    else if (deps.entries > 0) warm(grant.app, id, nowMs);
    return { kind: 'ok', value: { keyExpiresAtMs, snapshot } };
  }
}

/** The reads of `base` served through the caches: devices and flow here, views there. */
export function cachedReader(base: ApiReader, cache: NearCache, views: ViewCache): ApiReader {
  return {
    keyLive: base.keyLive,
    installations: views.installations,
    // A hit answers without a promise: the route then answers in the same turn.
    devices(keyHash, id, nowMs) {
      const snapshot = cache.peek(keyHash, id, nowMs);
      if (snapshot !== undefined) return snapshot.devicesRead;
      return cache
        .read(keyHash, id, nowMs)
        .then((r) => (r.kind === 'ok' ? r.value.snapshot.devicesRead : r));
    },
    async flows(keyHash, ids, nowMs) {
      // Hits from memory without a promise or an object each; misses as single reads, issued
      // together.
      const out: Array<Access<StoredFlow> | Promise<Access<StoredFlow>>> = new Array(ids.length);
      let misses = false;
      const monotonicMs = performance.now();
      for (let i = 0; i < ids.length; i++) {
        const snapshot = cache.peek(keyHash, ids[i] as number, nowMs, monotonicMs);
        if (snapshot !== undefined) {
          out[i] = flowReadOf(snapshot, nowMs);
        } else {
          out[i] = this.flow(keyHash, ids[i] as number, nowMs);
          misses = true;
        }
      }
      return misses ? Promise.all(out) : (out as Access<StoredFlow>[]);
    },
    flow(keyHash, id, nowMs) {
      const snapshot = cache.peek(keyHash, id, nowMs);
      if (snapshot !== undefined) return flowReadOf(snapshot, nowMs);
      return cache
        .read(keyHash, id, nowMs)
        .then((r) => (r.kind === 'ok' ? flowReadOf(r.value.snapshot, nowMs) : r));
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
    devices: snapshot.devices.map(String),
    memo: snapshot.memo,
  };
}
