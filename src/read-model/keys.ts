// The one place that builds Redis keys. Every key of one installation carries the hash tag
// `{i<id>}`, every key of one API key the tag `{k<sha256>}` and every key of one application
// the tag `{a<id>}`, so a multi-key script stays within one Redis Cluster slot.

import { type DeviceCategory, isDeviceCategory } from '../domain/device-fields.js';

export type InstallationId = number;

export interface ReadModelKeys {
  /** string: the Installation record as ready-to-send JSON. */
  installation(installationId: InstallationId): string;
  /** hash: `occurredAt` (epoch ms of the applied upsert), `companyId` (or ''). */
  installationMeta(installationId: InstallationId): string;
  /** hash: field `<category>:<deviceId>` -> the device record as ready-to-send JSON. */
  devices(installationId: InstallationId): string;
  /** hash: `data` -> energy-flow data as ready JSON or `null`; `validUntil` -> epoch ms, `0` = never. */
  flow(installationId: InstallationId): string;
  /**
   * hash: field = applicationId -> signed generation of the access write that set it: positive
   * while the application may read the installation (grant and owner access), negative once not.
   */
  acl(installationId: InstallationId): string;
  /**
   * hash, one per API key hash (a copy of its `apiKey.created`/`revoked` facts): `app` ->
   * applicationId, `exp` -> expiresAt epoch ms ('' = never), `revoked` -> '1' or '0', `v` -> '2'
   * (the format; key-status-codec.ts reads `exp`, also of records written before it).
   */
  keyStatus(keyHash: string): string;
  /**
   * hash, one per application (its `application.upserted`/`deleted` facts): `ownerType`,
   * `ownerId`, `enabled` ('1'/'0'), `deleted` ('1'/'0').
   */
  appStatus(applicationId: number): string;
  /**
   * sorted set: score = installationId, member = Installation JSON, of every installation the
   * application may read (getInstallations pages through it in id order).
   */
  appView(applicationId: number): string;
  /** Consumer bookkeeping of one application, under its hash tag `{a<id>}`. */
  internalOfApp(applicationId: number, ...parts: Array<string | number>): string;
  /** Any key of the consumer's own bookkeeping (facts, indexes, schedules), namespaced. */
  internal(...parts: Array<string | number>): string;
  /** Consumer bookkeeping of one installation, under its hash tag (scripts may touch it). */
  internalOf(installationId: InstallationId, ...parts: Array<string | number>): string;
  /** A key of one application's quota, under the application's hash tag `{a<id>}`. */
  quotaOf(applicationId: number, ...parts: Array<string | number>): string;
}

export function createKeys(prefix: string): ReadModelKeys {
  const inst = (id: InstallationId, suffix: string) => `${prefix}{i${id}}:${suffix}`;
  return {
    installation: (id) => inst(id, 'inst'),
    installationMeta: (id) => inst(id, 'meta'),
    devices: (id) => inst(id, 'devs'),
    flow: (id) => inst(id, 'flow'),
    acl: (id) => inst(id, 'acl'),
    keyStatus: (hash) => `${prefix}{k${hash}}:status`,
    appStatus: (app) => `${prefix}{a${app}}:status`,
    appView: (app) => `${prefix}{a${app}}:view`,
    internalOfApp: (app, ...parts) => `${prefix}{a${app}}:x:${parts.join(':')}`,
    internal: (...parts) => `${prefix}x:${parts.join(':')}`,
    internalOf: (id, ...parts) => inst(id, `x:${parts.join(':')}`),
    quotaOf: (app, ...parts) => [`${prefix}{a${app}}:quota`, ...parts].join(':'),
  };
}

export const deviceField = (category: DeviceCategory, deviceId: number): string =>
  `${category}:${deviceId}`;

/** The inverse of deviceField; null for a field that names no known category. */
export function parseDeviceField(
  field: string,
): { readonly category: DeviceCategory; readonly deviceId: number } | null {
  const sep = field.indexOf(':');
  const category = field.slice(0, sep);
  if (sep < 0 || !isDeviceCategory(category)) return null;
  return { category, deviceId: Number(field.slice(sep + 1)) };
}

/** string: epoch ms of the installation's latest deletion; events at or before it must not resurrect it. */
export const deletionMarkerKey = (keys: ReadModelKeys, installationId: InstallationId): string =>
  keys.internalOf(installationId, 'gone');

/**
 * hash: field `<category>:<deviceId>` -> `<firstSeenMs>;<lastSeenMs>` (precise times: the
 * records' dates are whole seconds), beside the devices hash and written with it; field `#rev`
 * -> the installation's revision, bumped by every writer of its devices or flow. Its suffix 'fi'
 * is from when it also held flow inputs; values written then have a third part, read as before.
 */
export const deviceTimesKey = (keys: ReadModelKeys, installationId: InstallationId): string =>
  keys.internalOf(installationId, 'fi');

/**
 * string: the read model's epoch, written when the model is built from the topics' start. Its
 * absence under a group that has committed offsets means the store lost its data (a FLUSHALL, a
 * replica promoted empty, a new volume). On Redis Cluster a shard can lose its data alone: one
 * marker per shard, `tag` chosen to hash to a slot of that shard (src/read-model/epoch.ts).
 */
export const epochKey = (keys: ReadModelKeys, tag = ''): string =>
  tag === '' ? keys.internal('epoch') : `${keys.internal('epoch')}:{${tag}}`;

/**
 * Sharded pub/sub channel (SPUBLISH) announcing each change of what the installation serves
 * (flow, devices, record, acl, deletion). Under the installation's hash tag, so the announcement
 * goes out in the slot, and the MULTI or script, of the write itself (src/read-model/change-feed.ts).
 */
export const changeChannel = (keys: ReadModelKeys, installationId: InstallationId): string =>
  keys.internalOf(installationId, 'changed');

/** The inverse of changeChannel for a channel of this prefix; null for any other name. */
export function parseChangeChannel(keys: ReadModelKeys, channel: string): InstallationId | null {
  const match = /\{i(-?\d+)\}:x:changed$/.exec(channel);
  if (!match || changeChannel(keys, Number(match[1])) !== channel) return null;
  return Number(match[1]);
}

/**
 * string `<inst>;<last>;<prev>;<removed>` ('' = none): where a device (field `<category>:<id>`)
 * lives now, in a slot of its own (hash tag `{d<category>:<id>}`): claimed by one installation's
 * owner at a time (src/read-model/lua/claim-device-1.lua, docs/projection.md). One string, not a
 * hash, so that claiming a new device is one SET NX GET (src/read-model/device-index-entry.ts).
 * Named `own`: the hash of earlier versions was `idx`, and the two never meet in one key.
 */
export const deviceIndexKey = (keys: ReadModelKeys, field: string): string =>
  keys.internal(`{d${field}}`, 'own');

/** set: device fields a deletion removed whose index entries are not released yet. */
export const pendingReleaseKey = (keys: ReadModelKeys, installationId: InstallationId): string =>
  keys.internalOf(installationId, 'release');

/**
 * hash `requestsPerMinute`: an application's quota override (from application.upserted), under
 * the application's hash tag `{a<id>}` beside its counters, so a lease script stays in one slot.
 */
export const applicationQuotaKey = (keys: ReadModelKeys, applicationId: number): string =>
  keys.quotaOf(applicationId);

/** string: request budget used (in tenths of a request) by an application in one window. */
export const quotaCounterKey = (keys: ReadModelKeys, applicationId: number, window: number) =>
  keys.quotaOf(applicationId, window);

/**
 * string: a counter bumped by every change of the application's view (beside it), so a reader
 * that kept a page knows with one GET whether it still stands.
 */
export const appViewVersionKey = (keys: ReadModelKeys, applicationId: number): string =>
  keys.internalOfApp(applicationId, 'viewver');

/** hash: installationId -> signed generation of the write that last set its view entry. */
export const appViewGenerationKey = (keys: ReadModelKeys, applicationId: number): string =>
  keys.internalOfApp(applicationId, 'viewgen');

/**
 * Channel (plain PUBLISH: a cluster carries it to every node) announcing each change of a key's
 * or an application's status: `k:<keyHash>` or `a:<applicationId>`. Rare (never per grant), so
 * one channel for the whole read model; the API's caches of those small records follow it.
 */
export const accessChannel = (keys: ReadModelKeys): string => keys.internal('access-changed');

/**
 * sorted set, member installationId, score validUntil (epoch ms): the flows of one telemetry
 * partition that time alone will change, under the partition's own tag, so its owner finds them
 * after an assignment without a scan (a per-partition schedule, never a global one).
 */
export const flowDueKey = (keys: ReadModelKeys, topic: string, partition: number): string =>
  keys.internal(`{p${topic}:${partition}}`, 'due');
