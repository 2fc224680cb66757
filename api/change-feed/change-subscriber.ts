import { traceparentOf } from '../../src/read-model/change-feed.js';
import {
  changeChannel,
  parseChangeChannel,
  type ReadModelKeys,
} from '../../src/read-model/keys.js';
import {
  duplicateConnection,
  isCluster,
  type RedisClient,
} from '../../src/read-model/redis-connection.js';

// The API's end of the change feed (src/read-model/change-feed.ts): one connection of its own
// holding the sharded channels of the installations someone here cares about (near-cache
// entries, open streams), reference-counted, so streams of one installation and its cache entry
// share one subscription. Whatever was learnt while subscribed may be stale once the connection
// drops: `reset` tells the holders, which drop or re-read; once back, the held channels are
// subscribed again (not by ioredis: its resubscription happens without telling us when) and
// `resubscribed` tells them to re-read.
//
// A holder that reads after `hold` resolved sees every later write announced: the subscription
// was confirmed before the read was sent. `stamp`/`unchanged` tell a read that raced an
// announcement (or a reset) so its result is not kept.
//
// With `traceContext` (the API traces), a listener is also given the traceparent an
// announcement carries: that of the sampled span that wrote the change (change-feed.ts).

export interface ChangeSubscriber {
  /**
   * Subscribes (or shares the subscription); true once Redis confirmed it, false if it could not.
   * While the connection is being made it waits for it (at most CONNECT_WAIT_MS).
   */
  hold(installationId: number): Promise<boolean>;
  release(installationId: number): void;
  /** Held and confirmed on the current connection, now. */
  confirmed(installationId: number): boolean;
  /** A token that changes with every announcement of the installation and every reset. */
  stamp(installationId: number): number;
  unchanged(installationId: number, stamp: number): boolean;
  /** Connected and subscribed, so a confirmed hold means what it says. */
  readonly ready: boolean;
  /** `traceparent`: the writing span's, when the write was traced and this process traces. */
  on(event: 'change', listener: (installationId: number, traceparent?: string) => void): void;
  on(event: 'reset' | 'resubscribed', listener: () => void): void;
  /**
   * Everything learnt may be stale though no announcement came (the read model was rebuilt
   * underneath): holders drop what they keep (`reset`) and re-read (`resubscribed`); reads in
   * flight are not kept. Subscriptions stay.
   */
  invalidate(): void;
  close(): Promise<void>;
}

// A subscription Redis refused or did not confirm in time is tried again this much later.
const RETRY_MS = 1_000;
// A hold made while the connection is still being made (the process's first moments, a
// reconnection) waits this long for it, so a stream opened then misses no announcement.
const CONNECT_WAIT_MS = 2_000;

interface Held {
  count: number;
  /** Resolves true once subscribed on the current connection; null after a reset. */
  confirmed: Promise<boolean> | null;
  /** What `confirmed` resolved to, once it has. */
  ok: boolean;
}

export function createChangeSubscriber(deps: {
  redis: RedisClient;
  keys: ReadModelKeys;
  /** Reads the writing span's traceparent out of announcements; off, the payload is not read. */
  traceContext?: boolean;
}): ChangeSubscriber {
  const { keys } = deps;
  const traceContext = deps.traceContext === true;
  let conn: RedisClient | null = null;
  let connected = false;
  let closed = false;
  const held = new Map<number, Held>();
  /** The sequence number of each held installation's latest announcement. */
  const versions = new Map<number, number>();
  let announcements = 0;
  let resets = 0;
  /** Resolves true when the connection is next ready, false after CONNECT_WAIT_MS. */
  let connecting: Promise<boolean> | null = null;
  let settleConnecting: ((ready: boolean) => void) | null = null;
  const listeners = {
    change: [] as Array<(id: number, traceparent?: string) => void>,
    reset: [] as Array<() => void>,
    resubscribed: [] as Array<() => void>,
  };

  function connection(): RedisClient {
    if (conn) return conn;
    // Commands fail at once while disconnected: a holder then reads without the cache.
    const c = duplicateConnection(
      deps.redis,
      {
        autoResubscribe: false,
        enableOfflineQueue: false,
        // Named, so an operator (or a test) finds it in CLIENT LIST.
        connectionName: `changes:${keys.internal('api').replace(/[^\w:.{}-]/g, '_')}`,
      },
      true,
    );
    c.on('error', () => undefined);
    c.on('smessageBuffer', (channel: Buffer, message: Buffer) => {
      const id = parseChangeChannel(keys, channel.toString('latin1'));
      if (id === null || !held.has(id)) return;
      versions.set(id, ++announcements);
      const traceparent = traceContext ? traceparentOf(message) : undefined;
      for (const l of listeners.change) l(id, traceparent);
    });
    const lost = () => {
      resets++;
      for (const h of held.values()) {
        h.confirmed = null;
        h.ok = false;
      }
      for (const l of listeners.reset) l();
    };
    c.on('close', () => {
      if (!connected) return;
      connected = false;
      lost();
    });
    // On a cluster each shard has a subscriber connection of its own, and losing one does not
    // close the cluster: whatever its slots announced meanwhile was missed all the same.
    if (isCluster(c))
      c.on('-node', () => {
        if (!connected) return;
        lost();
        resubscribe();
      });
    c.on('ready', () => {
      connected = true;
      settleConnecting?.(true);
      resubscribe();
    });
    conn = c;
    return c;
  }

  /** Subscribes every held channel again, then every holder re-reads. */
  function resubscribe(): void {
    if (held.size === 0 || !connected || closed) return;
    void Promise.all([...held.keys()].map((id) => confirm(id))).then(() => {
      for (const l of listeners.resubscribed) l();
    });
  }
  /** One retry at a time, however many subscriptions failed. */
  let retry: NodeJS.Timeout | null = null;
  function retryLater(): void {
    if (retry || closed) return;
    retry = setTimeout(() => {
      retry = null;
      resubscribe();
    }, RETRY_MS);
    retry.unref();
  }

  function whenConnected(): Promise<boolean> {
    if (connected) return Promise.resolve(true);
    connecting ??= new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => settleConnecting?.(false), CONNECT_WAIT_MS);
      timer.unref();
      settleConnecting = (ready) => {
        clearTimeout(timer);
        connecting = null;
        settleConnecting = null;
        resolve(ready);
      };
    });
    return connecting;
  }

  function confirm(id: number): Promise<boolean> {
    const h = held.get(id);
    if (!h) return Promise.resolve(false);
    if (h.confirmed) return h.confirmed;
    const c = connection();
    const subscribe = () =>
      c.ssubscribe(changeChannel(keys, id)).then(
        () => true,
        () => false,
      );
    // Connected, sent at once: a release in the same turn then follows it on the connection.
    // Else once connected, unless it was released meanwhile (nothing would unsubscribe it).
    const attempt = connected
      ? subscribe()
      : whenConnected().then((ready) => ready && held.get(id) === h && subscribe());
    h.confirmed = attempt;
    void attempt.then((ok) => {
      if (h.confirmed !== attempt) return;
      if (ok) h.ok = true;
      else {
        h.confirmed = null;
        // A stream holding it would miss announcements: try again, then every holder re-reads.
        if (connected) retryLater();
      }
    });
    return attempt;
  }

  return {
    get ready() {
      connection();
      return connected && !closed;
    },
    hold(id) {
      if (closed) return Promise.resolve(false);
      let h = held.get(id);
      if (!h) {
        h = { count: 0, confirmed: null, ok: false };
        held.set(id, h);
      }
      h.count++;
      return confirm(id);
    },
    release(id) {
      const h = held.get(id);
      if (!h) return;
      if (--h.count > 0) return;
      held.delete(id);
      versions.delete(id);
      if (connected && conn) conn.sunsubscribe(changeChannel(keys, id)).catch(() => undefined);
    },
    confirmed(id) {
      return connected && held.get(id)?.ok === true;
    },
    stamp(id) {
      return resets * 2 ** 32 + (versions.get(id) ?? 0);
    },
    unchanged(id, stamp) {
      return connected && held.has(id) && this.stamp(id) === stamp;
    },
    on(
      event: 'change' | 'reset' | 'resubscribed',
      listener: (id: number, traceparent?: string) => void,
    ) {
      (listeners[event] as Array<(id: number, traceparent?: string) => void>).push(listener);
    },
    invalidate() {
      resets++;
      for (const l of listeners.reset) l();
      for (const l of listeners.resubscribed) l();
    },
    async close() {
      closed = true;
      if (retry) clearTimeout(retry);
      settleConnecting?.(false);
      held.clear();
      if (conn) await conn.quit().catch(() => conn?.disconnect());
    },
  };
}
