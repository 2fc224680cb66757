// The one place that builds Redis keys. Every key of one installation carries the hash tag
// `{i<id>}` and every key of one API key the tag `{k<sha256>}`, so a multi-key script stays
// within one Redis Cluster slot.

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
  /** hash: field = SHA-256 hex of an API key allowed to read the installation -> expiresAt epoch ms, `0` = never. */
  acl(installationId: InstallationId): string;
  /**
   * hash, one per live API key: `app` -> applicationId, `exp` -> expiresAt epoch ms (`0` = never),
   * `i:<installationId>` -> Installation JSON of each installation the key may read.
   */
  keyView(keyHash: string): string;
  /** Any key of the consumer's own bookkeeping (facts, indexes, schedules), namespaced. */
  internal(...parts: Array<string | number>): string;
  /** Consumer bookkeeping of one installation, under its hash tag (scripts may touch it). */
  internalOf(installationId: InstallationId, ...parts: Array<string | number>): string;
}

export function createKeys(prefix: string): ReadModelKeys {
  const inst = (id: InstallationId, suffix: string) => `${prefix}{i${id}}:${suffix}`;
  return {
    installation: (id) => inst(id, 'inst'),
    installationMeta: (id) => inst(id, 'meta'),
    devices: (id) => inst(id, 'devs'),
    flow: (id) => inst(id, 'flow'),
    acl: (id) => inst(id, 'acl'),
    keyView: (hash) => `${prefix}{k${hash}}:view`,
    internal: (...parts) => `${prefix}x:${parts.join(':')}`,
    internalOf: (id, ...parts) => inst(id, `x:${parts.join(':')}`),
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

const INSTALLATION_FIELD_PREFIX = 'i:';

export const installationField = (installationId: InstallationId): string =>
  `${INSTALLATION_FIELD_PREFIX}${installationId}`;

/** The inverse of installationField; null for the key view's other fields (`app`, `exp`). */
export function parseInstallationField(field: string): InstallationId | null {
  return field.startsWith(INSTALLATION_FIELD_PREFIX)
    ? Number(field.slice(INSTALLATION_FIELD_PREFIX.length))
    : null;
}

/** string: epoch ms of the installation's latest deletion; older events must not resurrect it. */
export const deletionMarkerKey = (keys: ReadModelKeys, installationId: InstallationId): string =>
  keys.internalOf(installationId, 'gone');

/**
 * hash: field `<category>:<deviceId>` -> the device's flow inputs (src/read-model/flow-inputs.ts),
 * beside the devices hash and written with it, so a flow is computed without parsing records.
 */
export const flowInputsKey = (keys: ReadModelKeys, installationId: InstallationId): string =>
  keys.internalOf(installationId, 'fi');

/** hash inst, first, last, removed: where a device (field `<category>:<id>`) lives now. */
export const deviceIndexKey = (keys: ReadModelKeys, field: string): string =>
  keys.internal('dev', field);

/** set: device fields a deletion removed whose index entries are not released yet. */
export const pendingReleaseKey = (keys: ReadModelKeys, installationId: InstallationId): string =>
  keys.internalOf(installationId, 'release');
