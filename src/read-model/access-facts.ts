import type { ReadModelKeys } from './keys.js';

// Where the access facts of access-changes.v1 live (internal keys; the API never reads them).

export function accessFactKeys(keys: ReadModelKeys) {
  return {
    /** hash ownerType, ownerId, enabled ('1'/'0'), deleted ('1'/'0') */
    app: (appId: number) => keys.internal('app', appId),
    /** set of keyIds created for the application */
    appKeys: (appId: number) => keys.internal('app-keys', appId),
    /**
     * set of key hashes a re-created key left behind, until the application's next recompute
     * removes their views: kept with the fact, so a recompute that fails and is retried still
     * removes them.
     */
    appRetiredHashes: (appId: number) => keys.internal('app-retired', appId),
    /** hash app, hash, exp (epoch ms, 0 = never), revoked ('1'/'0') */
    key: (keyId: string) => keys.internal('key', keyId),
    /** set of installationIds the application holds a grant for */
    appGrants: (appId: number) => keys.internal('app-grants', appId),
    /** set of applicationIds holding a grant for the installation */
    installationGrants: (installationId: number) => keys.internal('inst-grants', installationId),
    /** set of installationIds the user is a direct member of */
    userInstallations: (userId: number) => keys.internal('user-insts', userId),
    /** counter: generations of the application's view recomputes (write-key-view-2.lua) */
    appGeneration: (appId: number) => keys.internal('app-gen', appId),
    /** set of applicationIds owned by the user or company */
    ownerApps: (type: string, ownerId: number) => keys.internal('owner-apps', type, ownerId),
  };
}

export type AccessFactKeys = ReturnType<typeof accessFactKeys>;
