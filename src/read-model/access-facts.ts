import type { ReadModelKeys } from './keys.js';

// Where the access facts of access-changes.v1 live, and the bookkeeping of the entries derived
// from them (docs/projection.md, "Access"). An application's facts and bookkeeping share its
// hash tag `{a<id>}`; an installation's grants list sits under the installation's tag.

export function accessFactKeys(keys: ReadModelKeys) {
  return {
    /** hash ownerType, ownerId, enabled ('1'/'0'), deleted ('1'/'0'): also what the API reads */
    app: (appId: number) => keys.appStatus(appId),
    /** set of keyIds created for the application */
    appKeys: (appId: number) => keys.internalOfApp(appId, 'keys'),
    /** hash app, hash, exp (key-status-codec.ts: epoch ms, '' = never), revoked ('1'/'0'), v */
    key: (keyId: string) => keys.internal('key', keyId),
    /** set of installationIds the application holds a grant for */
    appGrants: (appId: number) => keys.internalOfApp(appId, 'grants'),
    /** set of applicationIds holding a grant for the installation */
    installationGrants: (installationId: number) => keys.internalOf(installationId, 'grants'),
    /** set of installationIds the user is a direct member of */
    userInstallations: (userId: number) => keys.internal('user-insts', userId),
    /** set of applicationIds owned by the user or company */
    ownerApps: (type: string, ownerId: number) => keys.internal('owner-apps', type, ownerId),
    /** counter: the application's generations (enqueue-pairs-2.lua, write-acl-entry-2.lua) */
    appGeneration: (appId: number) => keys.internalOfApp(appId, 'gen'),
    /** sorted set: installationIds whose entries await derivation -> generation when recorded */
    appPending: (appId: number) => keys.internalOfApp(appId, 'pending'),
    /** hash seq, cursor: a pass over every grant of the application (its owner changed) */
    appSweep: (appId: number) => keys.internalOfApp(appId, 'sweep'),
    /**
     * set of applicationIds with pending entries or a sweep, recorded by the batches of one
     * partition of `topic`, under the partition's own tag: its owner works them off.
     */
    work: (topic: string, partition: number) => keys.internal(`{w${topic}:${partition}}`, 'work'),
  };
}

export type AccessFactKeys = ReturnType<typeof accessFactKeys>;
