import type { Redis } from 'ioredis';
import { parseDateTime } from '../domain/date-time.js';
import type { AccessEvent } from '../domain/events.js';
import { accessFactKeys } from './access-facts.js';
import { execOrThrow } from './exec.js';
import type { ReadModelKeys } from './keys.js';

// Stores one access fact as it arrived (in log order, which the fact-identity message key
// guarantees per fact) and says which applications' views it may change.

export interface FactEffect {
  readonly applications: readonly number[];
}

export interface AccessFactStore {
  apply(event: AccessEvent): Promise<FactEffect>;
}

export function createAccessFactStore(deps: { conn: Redis; keys: ReadModelKeys }): AccessFactStore {
  const { conn } = deps;
  const k = accessFactKeys(deps.keys);
  const only = (appId: number): FactEffect => ({ applications: [appId] });

  return {
    async apply(event) {
      switch (event.type) {
        case 'application.upserted': {
          const old = await conn.hmget(k.app(event.applicationId), 'ownerType', 'ownerId');
          const multi = conn.multi();
          if (
            old[0] &&
            old[1] &&
            (old[0] !== event.owner.type || Number(old[1]) !== event.owner.id)
          ) {
            multi.srem(k.ownerApps(old[0], Number(old[1])), event.applicationId);
          }
          multi.hset(k.app(event.applicationId), {
            ownerType: event.owner.type,
            ownerId: String(event.owner.id),
            enabled: event.enabled ? '1' : '0',
            deleted: '0',
          });
          multi.sadd(k.ownerApps(event.owner.type, event.owner.id), event.applicationId);
          await execOrThrow(multi);
          return only(event.applicationId);
        }
        case 'application.deleted':
          await conn.hset(k.app(event.applicationId), 'deleted', '1');
          return only(event.applicationId);
        case 'apiKey.created': {
          const old = await conn.hmget(k.key(event.keyId), 'app', 'hash');
          const applications = [event.applicationId];
          const multi = conn.multi();
          if (old[0] && Number(old[0]) !== event.applicationId) {
            multi.srem(k.appKeys(Number(old[0])), event.keyId);
            applications.push(Number(old[0]));
          }
          const exp = event.expiresAt === null ? 0 : (parseDateTime(event.expiresAt) ?? 0);
          multi.hset(k.key(event.keyId), {
            app: String(event.applicationId),
            hash: event.keyHash,
            exp: String(exp),
            revoked: '0',
          });
          multi.sadd(k.appKeys(event.applicationId), event.keyId);
          // The old hash's view must go; recorded with the fact, not returned, so that a retry
          // after a failed recompute (which then reads the new hash as the old) still knows it.
          if (old[1] && old[1] !== event.keyHash) {
            multi.sadd(k.appRetiredHashes(event.applicationId), old[1]);
          }
          await execOrThrow(multi);
          return { applications };
        }
        case 'apiKey.revoked': {
          const multi = conn.multi();
          multi.hset(k.key(event.keyId), 'revoked', '1');
          multi.hget(k.key(event.keyId), 'app');
          const [, app] = await execOrThrow(multi);
          return { applications: typeof app === 'string' ? [Number(app)] : [] };
        }
        case 'grant.added':
        case 'grant.removed': {
          const multi = conn.multi();
          if (event.type === 'grant.added') {
            multi.sadd(k.appGrants(event.applicationId), event.installationId);
            multi.sadd(k.installationGrants(event.installationId), event.applicationId);
          } else {
            multi.srem(k.appGrants(event.applicationId), event.installationId);
            multi.srem(k.installationGrants(event.installationId), event.applicationId);
          }
          await execOrThrow(multi);
          return only(event.applicationId);
        }
        case 'membership.added':
        case 'membership.removed': {
          const multi = conn.multi();
          if (event.type === 'membership.added') {
            multi.sadd(k.userInstallations(event.userId), event.installationId);
          } else {
            multi.srem(k.userInstallations(event.userId), event.installationId);
          }
          multi.smembers(k.ownerApps('user', event.userId));
          const [, apps] = await execOrThrow(multi);
          return { applications: (apps as string[]).map(Number) };
        }
      }
    },
  };
}
