import { z } from 'zod';
import type { OutgoingMessage } from '../../consumers/kafka/client.js';
import type { OwnerType } from '../../src/domain/access-rule.js';
import type {
  AccessEvent,
  ApiKeyCreatedEvent,
  ApplicationUpsertedEvent,
  GrantAddedEvent,
  MembershipAddedEvent,
} from '../../src/domain/events.js';
import { expectedMessageKey } from '../../src/domain/events.js';

// The access facts that make a new key work: the key's hash, a grant per installation, for a
// user owner the memberships the access rule requires, and, only when asked, the application
// itself (enabled): issuing a rotation key must not re-enable an application disabled on purpose.

export interface Owner {
  readonly type: OwnerType;
  readonly id: number;
}

const MAX_INSTALLATIONS = 100_000;
const id = z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER);

/** `user:5` or `company:7`. */
export const ownerSchema = z
  .string()
  .regex(/^(user|company):[1-9][0-9]*$/, 'expected user:<id> or company:<id>')
  .transform((text, ctx): Owner => {
    const [type, raw] = text.split(':') as [OwnerType, string];
    const parsed = id.safeParse(raw);
    if (!parsed.success) {
      ctx.addIssue({ code: 'custom', message: 'owner id out of range' });
      return z.NEVER;
    }
    return { type, id: parsed.data };
  });

/** `1,2,3`, `1-50` or a mix (`1-5,9`): sorted, without duplicates. */
export const installationListSchema = z
  .string()
  .regex(
    /^[1-9][0-9]*(-[1-9][0-9]*)?(,[1-9][0-9]*(-[1-9][0-9]*)?)*$/,
    'expected e.g. 1,2,3 or 1-50',
  )
  .transform((text, ctx) => {
    const ids = new Set<number>();
    for (const part of text.split(',')) {
      const [from, to = from] = part.split('-').map(Number) as [number, number?];
      if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || to < from) {
        ctx.addIssue({ code: 'custom', message: `invalid range ${part}` });
        return z.NEVER;
      }
      if (to - from + ids.size >= MAX_INSTALLATIONS) {
        ctx.addIssue({ code: 'custom', message: `more than ${MAX_INSTALLATIONS} installations` });
        return z.NEVER;
      }
      for (let i = from; i <= to; i++) ids.add(i);
    }
    return [...ids].sort((a, b) => a - b);
  });

export interface KeyGrantRequest {
  readonly applicationId: number;
  readonly owner: Owner;
  readonly installations: readonly number[];
  readonly keyId: string;
  readonly keyHash: string;
  /** Epoch ms; null = never expires. */
  readonly expiresAtMs: number | null;
  readonly nowMs: number;
  /**
   * Also publish `application.upserted` (owner, enabled), which creates or re-enables it.
   * Defaults to true for workload builders; the issue-key command passes its explicit flag.
   */
  readonly upsertApplication?: boolean;
}

/**
 * The events in a sensible order (application, memberships, grants, then the key). The consumer
 * derives access from the facts whatever order they arrive in, so the order is only cosmetic.
 */
export function keyGrantEvents(request: KeyGrantRequest): AccessEvent[] {
  const occurredAt = new Date(request.nowMs).toISOString();
  const { applicationId, owner } = request;
  const application: ApplicationUpsertedEvent = {
    type: 'application.upserted',
    occurredAt,
    applicationId,
    owner: { type: owner.type, id: owner.id },
    enabled: true,
  };
  const memberships: MembershipAddedEvent[] =
    owner.type === 'user'
      ? request.installations.map((installationId) => ({
          type: 'membership.added',
          occurredAt,
          userId: owner.id,
          installationId,
        }))
      : [];
  const grants: GrantAddedEvent[] = request.installations.map((installationId) => ({
    type: 'grant.added',
    occurredAt,
    applicationId,
    installationId,
  }));
  const key: ApiKeyCreatedEvent = {
    type: 'apiKey.created',
    occurredAt,
    keyId: request.keyId,
    applicationId,
    keyHash: request.keyHash,
    expiresAt: request.expiresAtMs === null ? null : new Date(request.expiresAtMs).toISOString(),
  };
  const upsert = request.upsertApplication ?? true;
  return [...(upsert ? [application] : []), ...memberships, ...grants, key];
}

/** Each event keyed by the identity of its fact (spec/events.md): `app:17`, `key:…`, … */
export function toAccessMessages(events: readonly AccessEvent[]): OutgoingMessage[] {
  return events.map((event) => ({ key: expectedMessageKey(event), value: JSON.stringify(event) }));
}
