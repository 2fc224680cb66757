import {
  installationField,
  parseInstallationField,
  type ReadModelKeys,
} from '../../src/read-model/keys.js';
import { isCluster, type RedisClient } from '../../src/read-model/redis-connection.js';
import type { Representation } from '../http/representation.js';
import { isViewLive } from './access-check.js';
import { flowScriptKeys, hgetallFlat } from './api-scripts.js';
import { slotRouter } from './slot-router.js';
import { writeBatcher } from './write-batching.js';

// Every read the API makes. A successful read is one command: the per-installation script's
// acl entry proves the key live (the consumers drop it in the same MULTI as the key view
// whenever the key, its application or its access ends, and it carries the key's expiry), and
// getInstallations reads the key view, which carries the key's liveness itself. Only when the
// script answers nil is the key view read, to tell 401 from 404: a missing and an inaccessible
// installation both take that same second command.

export type Access<T> =
  | { readonly kind: 'unauthorized' }
  | { readonly kind: 'absent' }
  | { readonly kind: 'ok'; readonly value: T };

/** One installation of a key view: its id and its stored JSON bytes. */
export interface StoredInstallation {
  readonly id: number;
  readonly json: Buffer;
}

export interface StoredFlow {
  readonly data: string;
  readonly validUntilMs: number;
  /** Flat field/value pairs of the devices hash, only when the stored flow has expired. */
  readonly devices: readonly string[] | null;
  /** The near-cache entry's memo, when read through it (null: built per request). */
  readonly memo: Memo | null;
}

export interface StoredInstallations {
  readonly installations: StoredInstallation[];
  /** The answer built from them, kept with the key view cache's entry (null: built per request). */
  readonly memo: { body: Representation | null } | null;
}

export interface StoredDevices {
  /** The devices hash as flat field/value pairs of stored bytes. */
  readonly pairs: readonly Buffer[];
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

/** A read answered from memory comes without a promise (near-cache hits, cached-reader.ts). */
export type Read<T> = Access<T> | Promise<Access<T>>;

export interface ApiReader {
  /** Whether the key is live at `nowMs` (used when parameters are bad: auth answers first). */
  keyLive(keyHash: string, nowMs: number): Promise<boolean>;
  /** Every installation the key may read, in no particular order. */
  installations(keyHash: string, nowMs: number): Promise<Access<StoredInstallations>>;
  devices(keyHash: string, id: number, nowMs: number): Read<StoredDevices>;
  flow(keyHash: string, id: number, nowMs: number): Read<StoredFlow>;
  /** `flow` of each id, in order: one one-slot command per installation, never a cross-slot one. */
  flows(keyHash: string, ids: readonly number[], nowMs: number): Promise<Access<StoredFlow>[]>;
}

const UNAUTHORIZED = { kind: 'unauthorized' } as const;
const ABSENT = { kind: 'absent' } as const;

export function createApiReader(connection: RedisClient, keys: ReadModelKeys): ApiReader {
  const sendTo = slotRouter(connection);
  // Only reads with small replies share socket writes: batching the large ones (devices, key
  // views) measured slower, their replies then arrive in one burst instead of as they are ready.
  // On a cluster a turn's reads spread over the masters, a third of the burst each, and holding
  // the devices reads measured faster there (uncached, 64 at a time: 46 µs of API CPU per request
  // against 64-68 unheld; 50-55 on a single Redis).
  const hold = writeBatcher(connection);
  const holdLarge = isCluster(connection);

  async function keyLive(keyHash: string, nowMs: number): Promise<boolean> {
    hold();
    const view = keys.keyView(keyHash);
    const [app, exp] = await sendTo(view, (redis) => redis.hmget(view, 'app', 'exp'));
    return isViewLive(app ?? null, exp ?? null, nowMs);
  }

  /** The script answered nil: no live grant, or no installation. The key view decides which. */
  async function refused(keyHash: string, nowMs: number) {
    return (await keyLive(keyHash, nowMs)) ? ABSENT : UNAUTHORIZED;
  }

  return {
    keyLive,

    async installations(keyHash, nowMs) {
      const key = keys.keyView(keyHash);
      const view = parseKeyView(await sendTo(key, (redis) => hgetallFlat(redis, key)), 0);
      if (!isViewLive(view.app, view.exp, nowMs)) return UNAUTHORIZED;
      return { kind: 'ok', value: { installations: view.installations, memo: null } };
    },

    async devices(keyHash, id, nowMs) {
      if (holdLarge) hold();
      const acl = keys.acl(id);
      const pairs = await sendTo(acl, (redis) =>
        redis.apiReadDevicesBuffer(acl, keys.installation(id), keys.devices(id), keyHash, nowMs),
      );
      if (pairs === null) return refused(keyHash, nowMs);
      return { kind: 'ok', value: { pairs, memo: null } };
    },

    flows(keyHash, ids, nowMs) {
      // Issued in one turn, corked: the ids leave in one socket write and cost one round trip.
      return Promise.all(ids.map((id) => this.flow(keyHash, id, nowMs)));
    },

    async flow(keyHash, id, nowMs) {
      hold();
      const read = flowScriptKeys(keys, id);
      const reply = await sendTo(read[0], (redis) => redis.apiReadFlow(...read, keyHash, nowMs));
      if (reply === null) return refused(keyHash, nowMs);
      const [data, validUntil, ...devices] = reply;
      const validUntilMs = Number(validUntil);
      const expired = validUntilMs !== 0 && validUntilMs < nowMs;
      return {
        kind: 'ok',
        value: {
          data: data ?? 'null',
          validUntilMs,
          devices: expired ? devices : null,
          memo: null,
        },
      };
    },
  };
}

/** A key view as stored: its liveness fields and its installations, in no particular order. */
export interface KeyView {
  readonly app: string | null;
  readonly exp: string | null;
  readonly installations: StoredInstallation[];
}

/** A key view from its flat HGETALL pairs, starting at `from`. */
export function parseKeyView(flat: readonly Buffer[], from: number): KeyView {
  let app: string | null = null;
  let exp: string | null = null;
  const installations: StoredInstallation[] = [];
  for (let i = from; i + 1 < flat.length; i += 2) {
    const field = flat[i] as Buffer;
    const value = flat[i + 1] as Buffer;
    const id = installationIdOf(field);
    if (id !== null) {
      installations.push({ id, json: value });
      continue;
    }
    const name = field.toString('latin1');
    if (name === 'app') app = value.toString('latin1');
    else if (name === 'exp') exp = value.toString('latin1');
  }
  return { app, exp, installations };
}

// installationField(id) is a fixed prefix and the decimal id.
const FIELD_PREFIX = Buffer.from(installationField(0).slice(0, -1), 'latin1');

/**
 * parseInstallationField on the reply's bytes, without a string per field (a key view holds
 * one field per installation). Digits beyond what the loop reads exactly take the string path.
 */
function installationIdOf(field: Buffer): number | null {
  const start = FIELD_PREFIX.length;
  for (let i = 0; i < start; i++) if (field[i] !== FIELD_PREFIX[i]) return null;
  const negative = field[start] === 0x2d;
  const first = negative ? start + 1 : start;
  if (field.length === first || field.length - first > 15) {
    return parseInstallationField(field.toString('latin1'));
  }
  let id = 0;
  for (let i = first; i < field.length; i++) {
    const digit = (field[i] as number) - 0x30;
    if (digit < 0 || digit > 9) return parseInstallationField(field.toString('latin1'));
    id = id * 10 + digit;
  }
  return negative ? -id : id;
}
