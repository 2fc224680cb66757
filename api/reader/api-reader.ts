import type { ProjectedFlow } from '../../src/projection/installation-state.js';
import { appViewVersionKey, type ReadModelKeys } from '../../src/read-model/keys.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import type { Representation } from '../http/representation.js';
import { flowScriptKeys } from './api-scripts.js';
import type { KeyAccess, KeyGrant } from './key-access.js';
import { type SendTo, slotRouter } from './slot-router.js';
import { writeBatcher } from './write-batching.js';

// Every read the API makes. The key is judged first, from its status and its application's
// (key-access.ts, kept in memory while the access channel is heard): a refused key is 401
// before any data is read. A read is then one command in the installation's slot, whose acl
// entry says whether the key's application may read it: nil answers "missing" and "not yours"
// alike (404). getInstallations reads the application's view a page at a time, in id order.

export type Access<T> =
  | { readonly kind: 'unauthorized' }
  | { readonly kind: 'absent' }
  | { readonly kind: 'ok'; readonly value: T };

/** One installation of a view: its id and its stored JSON bytes. */
export interface StoredInstallation {
  readonly id: number;
  readonly json: Buffer;
}

/** A projected flow as read back, with what a read past its validity needs. */
export interface StoredFlow extends ProjectedFlow {
  /** Flat field/value pairs of the devices hash, only when the stored flow has expired. */
  readonly devices: readonly string[] | null;
  /**
   * Where answers built from these bytes are kept as long as they are (a near-cache entry's);
   * null: built per request, always so for an expired flow (recomputed for its instant).
   */
  readonly memo: Memo | null;
}

export interface StoredInstallations {
  /** The key's application, whose view this is a page of. */
  readonly app: number;
  /** Ascending by id. */
  readonly installations: StoredInstallation[];
  /** More installations follow the last one (the page was full). */
  readonly more: boolean;
  /** The answer built from them, kept with the view cache's entry (null: built per request). */
  readonly memo: { body: Representation | null } | null;
}

/** Which page of a key's installations: those after `afterId` (null: from the first), `limit` at most. */
export interface PageRequest {
  readonly afterId: number | null;
  readonly limit: number;
}

export interface StoredDevices {
  /** The devices hash as flat field/value pairs of stored bytes. */
  readonly pairs: readonly Buffer[];
  /** Where answers built from these bytes are kept, as for a flow (null: built per request). */
  readonly memo: Memo | null;
}

/**
 * What the routes built from one near-cache entry (bodies with their ETag and Last-Modified),
 * kept with it and dropped with it, so a hit pays no hashing or date work. Only what depends on
 * the entry's bytes alone: never an expired flow, which depends on the time of the request.
 */
export interface FlowPart {
  /** `{"installationId":…,"data":…}` in UTF-8: the flow's element of the bulk body, ready to copy. */
  readonly json: Buffer;
  /** The id, then the ETag of the `data` bytes alone: the flow's share of the bulk ETag's input. */
  readonly tagged: string;
  /** Its `"lastUpdated":"…"` member, null when `data` is null. */
  readonly updated: string | null;
  /** That date in ms and as an HTTP-date: the bulk Last-Modified when it is the latest. */
  readonly updatedMs: number | null;
  readonly updatedHttp: string | null;
}

export interface Memo {
  flow: Representation | null;
  /** The flow's `data` as the bulk endpoint uses it (bulk-flow-route.ts). */
  flowPart: FlowPart | null;
  devices: Representation | null;
}

/** A read answered from memory comes without a promise (near-cache hits, near-cache/cached-reader.ts). */
export type Read<T> = Access<T> | Promise<Access<T>>;

export interface ApiReader {
  /** Whether the key is live at `nowMs` (used when parameters are bad: auth answers first). */
  keyLive(keyHash: string, nowMs: number): Promise<boolean>;
  /** One page of the installations the key may read, ascending by id. */
  installations(
    keyHash: string,
    nowMs: number,
    page: PageRequest,
  ): Promise<Access<StoredInstallations>>;
  /**
   * A further page of an application's view, for an answer whose key was judged at its start
   * (a streamed list is one answer, as a single read is).
   */
  viewPage(app: number, page: PageRequest): Promise<StoredInstallations>;
  devices(keyHash: string, id: number, nowMs: number): Read<StoredDevices>;
  flow(keyHash: string, id: number, nowMs: number): Read<StoredFlow>;
  /** `flow` of each id, in order: one one-slot command per installation, never a cross-slot one. */
  flows(keyHash: string, ids: readonly number[], nowMs: number): Promise<Access<StoredFlow>[]>;
}

/** The per-installation reads for an application whose key was already judged. */
export interface AppReads {
  flowOf(app: number, id: number, nowMs: number): Promise<Access<StoredFlow>>;
  devicesOf(app: number, id: number, nowMs: number): Promise<Access<StoredDevices>>;
}

export const UNAUTHORIZED = { kind: 'unauthorized' } as const;
export const ABSENT = { kind: 'absent' } as const;

/**
 * `read` with the key's grant: at once when the key's records are in memory, else after reading
 * them; 401 for a refused key.
 */
export function withGrant<T>(
  access: KeyAccess,
  keyHash: string,
  nowMs: number,
  read: (grant: KeyGrant) => Read<T>,
): Read<T> {
  const grant = access.peek(keyHash, nowMs);
  if (grant === null) return UNAUTHORIZED;
  if (grant !== undefined) return read(grant);
  return access.resolve(keyHash, nowMs).then((g) => (g === null ? UNAUTHORIZED : read(g)));
}

export function createApiReader(
  connection: RedisClient,
  keys: ReadModelKeys,
  access: KeyAccess,
  /** Where the reads go instead while its connection is up (API_REDIS_READ_REPLICAS). */
  replica: RedisClient | null = null,
): ApiReader & AppReads {
  // The flow and devices reads share socket writes (write-batching.ts): a socket write costs
  // about what the rest of an uncached devices read does (uncached, 64 at a time, one Redis: 44
  // µs of API CPU per request held against 52 unheld, 8 % more throughput; a cluster measured
  // 46 against 64-68). View pages, ~27 KB replies, gained nothing held: they are sent at once.
  const masters = { sendTo: slotRouter(connection), hold: writeBatcher(connection) };
  const replicas = replica && { sendTo: slotRouter(replica, true), hold: writeBatcher(replica) };
  // A replica connection not up (yet, or any more): its reads go to the masters meanwhile.
  const route = () => (replicas !== null && replica?.status === 'ready' ? replicas : masters);
  const sendTo: SendTo = (key, read) => route().sendTo(key, read);
  const hold = () => route().hold();

  async function flowOf(app: number, id: number, nowMs: number): Promise<Access<StoredFlow>> {
    hold();
    const read = flowScriptKeys(keys, id);
    const reply = await sendTo(read[0], (redis) => redis.apiReadFlow(...read, app, nowMs));
    if (reply === null) return ABSENT;
    const [data, validUntil, ...devices] = reply;
    const validUntilMs = Number(validUntil);
    const expired = validUntilMs !== 0 && validUntilMs < nowMs;
    return {
      kind: 'ok',
      value: { data: data ?? 'null', validUntilMs, devices: expired ? devices : null, memo: null },
    };
  }

  async function devicesOf(app: number, id: number, nowMs: number): Promise<Access<StoredDevices>> {
    hold();
    const acl = keys.acl(id);
    const pairs = await sendTo(acl, (redis) =>
      redis.apiReadDevicesBuffer(acl, keys.installation(id), keys.devices(id), app, nowMs),
    );
    return pairs === null ? ABSENT : { kind: 'ok', value: { pairs, memo: null } };
  }

  return {
    async keyLive(keyHash, nowMs) {
      return (await access.resolve(keyHash, nowMs)) !== null;
    },

    async installations(keyHash, nowMs, page) {
      const grant = await access.resolve(keyHash, nowMs);
      if (grant === null) return UNAUTHORIZED;
      return { kind: 'ok', value: await this.viewPage(grant.app, page) };
    },

    viewPage: (app, page) => readPage(sendTo, keys, app, page),

    flowOf,
    devicesOf,

    devices(keyHash, id, nowMs) {
      return withGrant(access, keyHash, nowMs, (g) => devicesOf(g.app, id, nowMs));
    },

    flows(keyHash, ids, nowMs) {
      // Issued in one turn, corked: the ids leave in one socket write and cost one round trip.
      return Promise.all(ids.map((id) => this.flow(keyHash, id, nowMs)));
    },

    flow(keyHash, id, nowMs) {
      return withGrant(access, keyHash, nowMs, (g) => flowOf(g.app, id, nowMs));
    },
  };
}

/** The view page script's reply: the version, then one more than `limit` at most. */
export function readViewPage(
  sendTo: ReturnType<typeof slotRouter>,
  keys: ReadModelKeys,
  app: number,
  page: PageRequest,
): Promise<Buffer[]> {
  const view = keys.appView(app);
  // One more than asked: whether another page follows, without a second read.
  return sendTo(view, (redis) =>
    redis.apiReadViewPageBuffer(
      view,
      appViewVersionKey(keys, app),
      page.afterId === null ? '-inf' : String(page.afterId),
      page.limit + 1,
    ),
  );
}

/** One page of an application's view, read without keeping it. */
export async function readPage(
  sendTo: ReturnType<typeof slotRouter>,
  keys: ReadModelKeys,
  app: number,
  page: PageRequest,
): Promise<StoredInstallations> {
  const flat = await readViewPage(sendTo, keys, app, page);
  const { installations, more } = parseViewPage(flat, page.limit);
  return { app, installations, more, memo: null };
}

/** A page from the script's flat reply (version first, then JSON, id pairs). */
export function parseViewPage(
  flat: readonly Buffer[],
  limit: number,
): { version: string; installations: StoredInstallation[]; more: boolean } {
  const installations: StoredInstallation[] = [];
  for (let i = 1; i + 1 < flat.length && installations.length < limit; i += 2) {
    installations.push({ id: Number(String(flat[i + 1])), json: flat[i] as Buffer });
  }
  return {
    version: String(flat[0] ?? ''),
    installations,
    more: (flat.length - 1) / 2 > limit,
  };
}
