// The one place that builds Redis keys. Every key of one installation carries the hash tag
// `{i<id>}` and every key of one API key the tag `{k<sha256>}`, so a multi-key script stays
// within one Redis Cluster slot.

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

export const deviceField = (category: string, deviceId: number): string =>
  `${category}:${deviceId}`;

export const installationField = (installationId: InstallationId): string => `i:${installationId}`;
