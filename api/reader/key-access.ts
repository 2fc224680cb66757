import { isUnexpired } from '../../src/domain/access-rule.js';
import { decodeKeyExpiry } from '../../src/read-model/key-status-codec.js';
import { accessChannel, type ReadModelKeys } from '../../src/read-model/keys.js';
import { duplicateConnection, type RedisClient } from '../../src/read-model/redis-connection.js';
import { slotRouter } from './slot-router.js';

// Who a key is, decided per request from two small records: the key's status (its application,
// expiry, revocation) and its application's status (enabled, deleted). Neither grows with the
// grants, so a revocation or a disabled application is refused as soon as its record is
// written, whatever the access topic is busy with. Both are kept in memory while this process
// hears the access channel, where the consumers announce every change of either record
// (write-status-1.lua): an announcement, a lost connection or `maxAgeMs` drops what was kept, and
// a read that raced an announcement is not kept. Without the channel every request reads them.

/** A live key: the application whose grants it reads, and when it expires (epoch ms; null = never). */
export interface KeyGrant {
  readonly app: number;
  readonly expiresAtMs: number | null;
}

export interface KeyAccess {
  /** The key's grant now; null when refused; undefined when it must be read (`resolve`). */
  peek(keyHash: string, nowMs: number): KeyGrant | null | undefined;
  resolve(keyHash: string, nowMs: number): Promise<KeyGrant | null>;
  /** The application of a key, live or not (quotas count refused requests too); null: none. */
  applicationOf(keyHash: string): Promise<number | null>;
  /** A key's or an application's status may have changed (`k:<hash>`, `a:<id>`, or `*`). */
  onChange(listener: (what: string) => void): void;
  /** Forgets every record (the read model was rebuilt underneath). */
  clear(): void;
  close(): Promise<void>;
}

interface KeyRecord {
  readonly app: number;
  readonly expiresAtMs: number | null;
  readonly revoked: boolean;
}

interface Kept<T> {
  readonly value: T;
  readonly at: number;
}

// Records kept at most, each kind; least recently read out first.
const KEPT = 10_000;

export function createKeyAccess(deps: {
  redis: RedisClient;
  keys: ReadModelKeys;
  /** A kept record is read again after this, announced or not. */
  maxAgeMs: number;
}): KeyAccess {
  const { keys } = deps;
  const sendTo = slotRouter(deps.redis);
  const keyRecords = new Map<string, Kept<KeyRecord | null>>();
  const appLive = new Map<number, Kept<boolean>>();
  const listeners: Array<(what: string) => void> = [];
  // Bumped by every announcement and every loss of the channel: a read begun before is not kept.
  let era = 0;
  // Bumped by every loss of the channel: a subscription confirmed on an older one means nothing.
  let connections = 0;
  let hearing = false;
  let closed = false;

  const channel = accessChannel(keys);
  const sub = duplicateConnection(deps.redis, { enableOfflineQueue: false });
  sub.on('error', () => undefined);
  sub.on('message', (_channel: string, message: string) => {
    era++;
    if (message.startsWith('k:')) keyRecords.delete(message.slice(2));
    else if (message.startsWith('a:')) appLive.delete(Number(message.slice(2)));
    for (const l of listeners) l(message);
  });
  const lost = () => {
    era++;
    connections++;
    hearing = false;
    keyRecords.clear();
    appLive.clear();
    for (const l of listeners) l('*');
  };
  sub.on('close', lost);
  sub.on('ready', () => {
    const at = connections;
    sub.subscribe(channel).then(
      () => {
        if (connections === at && !closed) hearing = true;
      },
      () => undefined,
    );
  });

  function fresh<K, T>(map: Map<K, Kept<T>>, id: K): Kept<T> | undefined {
    const kept = map.get(id);
    if (kept === undefined) return undefined;
    if (performance.now() - kept.at >= deps.maxAgeMs) {
      map.delete(id);
      return undefined;
    }
    return kept;
  }

  function keep<K, T>(map: Map<K, Kept<T>>, id: K, value: T, begun: number): void {
    if (!hearing || begun !== era) return;
    map.delete(id);
    map.set(id, { value, at: performance.now() });
    if (map.size > KEPT) map.delete(map.keys().next().value as K);
  }

  async function readKey(keyHash: string): Promise<KeyRecord | null> {
    const kept = fresh(keyRecords, keyHash);
    if (kept) return kept.value;
    const begun = era;
    const key = keys.keyStatus(keyHash);
    const [app, exp, revoked, version] = await sendTo(key, (r) =>
      r.hmget(key, 'app', 'exp', 'revoked', 'v'),
    );
    // An expiry this reader cannot place (key-status-codec.ts) refuses the key: never "never".
    const expiresAtMs = decodeKeyExpiry(exp ?? null, version ?? null);
    const record =
      app && expiresAtMs !== undefined && Number.isSafeInteger(Number(app))
        ? { app: Number(app), expiresAtMs, revoked: revoked !== '0' }
        : null;
    keep(keyRecords, keyHash, record, begun);
    return record;
  }

  async function readApp(app: number): Promise<boolean> {
    const kept = fresh(appLive, app);
    if (kept) return kept.value;
    const begun = era;
    const key = keys.appStatus(app);
    const [enabled, deleted] = await sendTo(key, (r) => r.hmget(key, 'enabled', 'deleted'));
    const live = enabled === '1' && deleted !== '1';
    keep(appLive, app, live, begun);
    return live;
  }

  const grantOf = (record: KeyRecord | null, live: boolean, nowMs: number): KeyGrant | null =>
    record !== null && live && !record.revoked && isUnexpired(record.expiresAtMs, nowMs)
      ? record
      : null;

  return {
    peek(keyHash, nowMs) {
      const record = fresh(keyRecords, keyHash);
      if (record === undefined) return undefined;
      if (record.value === null) return null;
      const live = fresh(appLive, record.value.app);
      return live === undefined ? undefined : grantOf(record.value, live.value, nowMs);
    },
    async resolve(keyHash, nowMs) {
      const record = await readKey(keyHash);
      if (record === null || record.revoked) return null;
      return grantOf(record, await readApp(record.app), nowMs);
    },
    async applicationOf(keyHash) {
      return (await readKey(keyHash))?.app ?? null;
    },
    onChange(listener) {
      listeners.push(listener);
    },
    clear() {
      era++;
      keyRecords.clear();
      appLive.clear();
      for (const l of listeners) l('*');
    },
    async close() {
      closed = true;
      hearing = false;
      await sub.quit().catch(() => sub.disconnect());
    },
  };
}
