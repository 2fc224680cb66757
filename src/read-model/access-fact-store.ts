import { parseDateTime } from '../domain/date-time.js';
import type { AccessEvent } from '../domain/events.js';
import { accessFactKeys } from './access-facts.js';
import { execOrThrow } from './exec.js';
import { applicationQuotaKey, type ReadModelKeys } from './keys.js';
import type { RedisClient } from './redis-connection.js';
import { slotPipeline } from './slot-pipeline.js';

// Stores one access fact as it arrived (in log order, which the fact-identity message key
// guarantees per fact) and says which applications' views it may change.

export interface FactEffect {
  readonly applications: readonly number[];
}

export interface AccessFactStore {
  apply(event: AccessEvent): Promise<FactEffect>;
}

export function createAccessFactStore(deps: {
  conn: RedisClient;
  keys: ReadModelKeys;
}): AccessFactStore {
  const { conn } = deps;
  const k = accessFactKeys(deps.keys);
  const only = (appId: number): FactEffect => ({ applications: [appId] });

  return {
    async apply(event) {
      switch (event.type) {
        case 'application.upserted': {
          const old = await conn.hmget(k.app(event.applicationId), 'ownerType', 'ownerId');
          // One key (one slot) per command, in an order a replay after a crash completes: the
          // old owner is read from the fact until the fact itself is rewritten.
          if (
            old[0] &&
            old[1] &&
            (old[0] !== event.owner.type || Number(old[1]) !== event.owner.id)
          ) {
            await conn.srem(k.ownerApps(old[0], Number(old[1])), event.applicationId);
          }
          await conn.hset(k.app(event.applicationId), {
            ownerType: event.owner.type,
            ownerId: String(event.owner.id),
            enabled: event.enabled ? '1' : '0',
            deleted: '0',
          });
          await conn.sadd(k.ownerApps(event.owner.type, event.owner.id), event.applicationId);
          // The quota override sits in the application's own slot, beside its counters, where
          // the API's lease script reads it; one command, idempotent, in the fact's log order.
          const quota = applicationQuotaKey(deps.keys, event.applicationId);
          if (event.requestsPerMinute === undefined) await conn.hdel(quota, 'requestsPerMinute');
          else await conn.hset(quota, 'requestsPerMinute', String(event.requestsPerMinute));
          return only(event.applicationId);
        }
        case 'application.deleted':
          await conn.hset(k.app(event.applicationId), 'deleted', '1');
          return only(event.applicationId);
        case 'apiKey.created': {
          const old = await conn.hmget(k.key(event.keyId), 'app', 'hash');
          const applications = [event.applicationId];
          // One slot per command, ordered so a replay after a crash completes the fact: what
          // the old fact says is acted on before the fact is rewritten.
          if (old[0] && Number(old[0]) !== event.applicationId) {
            await conn.srem(k.appKeys(Number(old[0])), event.keyId);
            applications.push(Number(old[0]));
          }
          // The old hash's view must go; recorded with the fact, not returned, so that a retry
          // after a failed recompute (which then reads the new hash as the old) still knows it.
          if (old[1] && old[1] !== event.keyHash) {
            await conn.sadd(k.appRetiredHashes(event.applicationId), old[1]);
          }
          const exp = event.expiresAt === null ? 0 : (parseDateTime(event.expiresAt) ?? 0);
          await conn.hset(k.key(event.keyId), {
            app: String(event.applicationId),
            hash: event.keyHash,
            exp: String(exp),
            revoked: '0',
          });
          await conn.sadd(k.appKeys(event.applicationId), event.keyId);
          return { applications };
        }
        case 'apiKey.revoked': {
          const pipeline = conn.pipeline();
          pipeline.hset(k.key(event.keyId), 'revoked', '1');
          pipeline.hget(k.key(event.keyId), 'app');
          const [, app] = await execOrThrow(pipeline);
          return { applications: typeof app === 'string' ? [Number(app)] : [] };
        }
        case 'grant.added':
        case 'grant.removed': {
          // Two slots, two idempotent commands: a replay completes a half-applied fact.
          const pipeline = slotPipeline(conn);
          if (event.type === 'grant.added') {
            pipeline.sadd(k.appGrants(event.applicationId), event.installationId);
            pipeline.sadd(k.installationGrants(event.installationId), event.applicationId);
          } else {
            pipeline.srem(k.appGrants(event.applicationId), event.installationId);
            pipeline.srem(k.installationGrants(event.installationId), event.applicationId);
          }
          await execOrThrow(pipeline);
          return only(event.applicationId);
        }
        case 'membership.added':
        case 'membership.removed': {
          // Two slots (the user's installations, the owner's applications).
          const pipeline = slotPipeline(conn);
          if (event.type === 'membership.added') {
            pipeline.sadd(k.userInstallations(event.userId), event.installationId);
          } else {
            pipeline.srem(k.userInstallations(event.userId), event.installationId);
          }
          pipeline.smembers(k.ownerApps('user', event.userId));
          const [, apps] = await execOrThrow(pipeline);
          return { applications: (apps as string[]).map(Number) };
        }
      }
    },
  };
}
