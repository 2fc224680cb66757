import type { ChainableCommander } from 'ioredis';
import { parseDateTime } from '../domain/date-time.js';
import type { AccessEvent } from '../domain/events.js';
import { accessFactKeys } from './access-facts.js';
import { execOrThrow } from './exec.js';
import { encodeKeyExpiry, KEY_STATUS_VERSION } from './key-status-codec.js';
import { accessChannel, applicationQuotaKey, type ReadModelKeys } from './keys.js';
import type { RedisClient } from './redis-connection.js';
import { type ScriptedPipeline, scriptedPipeline, withScripts } from './scripts.js';

// Stores access facts as they arrived (in log order, which the fact-identity message key
// guarantees per fact) and says which derived entries they may change. A key's or an
// application's status is a copy of its facts, written here and announced at once: refusing a
// revoked key or a disabled application never waits for anything proportional to its grants.
// Grants and memberships go out pipelined, a batch's worth in one round trip per node.

export interface AccessEffects {
  /** applicationId -> installationIds whose (application, installation) entries may change. */
  readonly pairs: Map<number, Set<number>>;
  /** Applications whose every grant must be derived again (their owner changed). */
  readonly sweeps: Set<number>;
}

export interface AccessFactStore {
  applyAll(events: readonly AccessEvent[]): Promise<AccessEffects>;
}

export const noEffects = (): AccessEffects => ({ pairs: new Map(), sweeps: new Set() });

export function addPair(effects: AccessEffects, app: number, installationId: number): void {
  const ids = effects.pairs.get(app);
  if (ids === undefined) effects.pairs.set(app, new Set([installationId]));
  else ids.add(installationId);
}

export function createAccessFactStore(deps: {
  conn: RedisClient;
  keys: ReadModelKeys;
}): AccessFactStore {
  const conn = withScripts(deps.conn);
  const k = accessFactKeys(deps.keys);
  const channel = accessChannel(deps.keys);
  const status = (p: ChainableCommander, key: string, message: string, fields: string[]) =>
    (p as ScriptedPipeline).writeStatus(key, channel, message, ...fields);

  /** One command at a time, in order: a replay after a crash completes what a cut left. */
  async function run(build: (p: ScriptedPipeline) => void): Promise<unknown[]> {
    const p = scriptedPipeline(conn);
    build(p);
    return execOrThrow(p);
  }

  async function applyApplication(event: AccessEvent & { type: 'application.upserted' }) {
    const app = event.applicationId;
    const [oldType, oldId] = await conn.hmget(k.app(app), 'ownerType', 'ownerId');
    const ownerChanged = oldType !== event.owner.type || Number(oldId) !== event.owner.id;
    // The old owner is read from the fact until the fact itself is rewritten.
    if (oldType && oldId && ownerChanged) await conn.srem(k.ownerApps(oldType, Number(oldId)), app);
    await run((p) => {
      status(p, k.app(app), `a:${app}`, [
        'ownerType',
        event.owner.type,
        'ownerId',
        String(event.owner.id),
        'enabled',
        event.enabled ? '1' : '0',
        'deleted',
        '0',
      ]);
      p.sadd(k.ownerApps(event.owner.type, event.owner.id), app);
      // The quota override sits in the application's slot, where the API's lease script reads it.
      const quota = applicationQuotaKey(deps.keys, app);
      if (event.requestsPerMinute === undefined) p.hdel(quota, 'requestsPerMinute');
      else p.hset(quota, 'requestsPerMinute', String(event.requestsPerMinute));
    });
    return ownerChanged;
  }

  async function applyKeyCreated(event: AccessEvent & { type: 'apiKey.created' }) {
    const [oldApp, oldHash] = await conn.hmget(k.key(event.keyId), 'app', 'hash');
    const expiresAtMs = event.expiresAt === null ? null : parseDateTime(event.expiresAt);
    // Validated by the schema: a date that does not parse must never read as "never expires".
    if (expiresAtMs === null && event.expiresAt !== null)
      throw new RangeError(`expiresAt not validated: ${event.expiresAt}`);
    const exp = encodeKeyExpiry(expiresAtMs);
    await run((p) => {
      if (oldApp && Number(oldApp) !== event.applicationId)
        p.srem(k.appKeys(Number(oldApp)), event.keyId);
      // A re-created keyId retires its old key, before the fact that names it is rewritten.
      if (oldHash && oldHash !== event.keyHash)
        status(p, deps.keys.keyStatus(oldHash), `k:${oldHash}`, ['revoked', '1']);
    });
    await run((p) => {
      p.hset(k.key(event.keyId), {
        app: String(event.applicationId),
        hash: event.keyHash,
        exp,
        revoked: '0',
        v: KEY_STATUS_VERSION,
      });
      status(p, deps.keys.keyStatus(event.keyHash), `k:${event.keyHash}`, [
        'app',
        String(event.applicationId),
        'exp',
        exp,
        'revoked',
        '0',
        // With `exp`, in one script (key-status-codec.ts): no reader sees one without the other.
        'v',
        KEY_STATUS_VERSION,
      ]);
      p.sadd(k.appKeys(event.applicationId), event.keyId);
    });
  }

  async function applyKeyRevoked(keyId: string) {
    const [, hash] = await run((p) => {
      p.hset(k.key(keyId), 'revoked', '1');
      p.hget(k.key(keyId), 'hash');
    });
    if (typeof hash === 'string')
      await run((p) => status(p, deps.keys.keyStatus(hash), `k:${hash}`, ['revoked', '1']));
  }

  return {
    async applyAll(batchEvents) {
      const effects = noEffects();
      // Keys and applications first: facts of different identities commute (their derivations
      // read every current fact), so a revocation never waits for the batch's grants; each
      // fact's own messages keep their order.
      const events = [
        ...batchEvents.filter(isStatusFact),
        ...batchEvents.filter((e) => !isStatusFact(e)),
      ];
      // Grants and memberships of consecutive messages share a pipeline; a fact that reads
      // before it writes flushes it first, so log order holds for every fact.
      let batch = scriptedPipeline(conn);
      let onReplies: Array<(replies: unknown[]) => void> = [];
      const flush = async () => {
        if (batch.length === 0) return;
        const replies = await execOrThrow(batch);
        for (const f of onReplies) f(replies);
        batch = scriptedPipeline(conn);
        onReplies = [];
      };
      for (const event of events) {
        switch (event.type) {
          case 'grant.added':
          case 'grant.removed': {
            const { applicationId: app, installationId: id } = event;
            // The installation's side (which applications to tell of its upserts) is kept by
            // the pair's derivation (access-store.ts): one command per grant here.
            if (event.type === 'grant.added') batch.sadd(k.appGrants(app), id);
            else batch.srem(k.appGrants(app), id);
            addPair(effects, app, id);
            break;
          }
          case 'membership.added':
          case 'membership.removed': {
            const { userId, installationId: id } = event;
            if (event.type === 'membership.added') batch.sadd(k.userInstallations(userId), id);
            else batch.srem(k.userInstallations(userId), id);
            const at = batch.length;
            batch.smembers(k.ownerApps('user', userId));
            onReplies.push((replies) => {
              for (const app of replies[at] as string[]) addPair(effects, Number(app), id);
            });
            break;
          }
          case 'application.upserted':
            await flush();
            if (await applyApplication(event)) effects.sweeps.add(event.applicationId);
            break;
          case 'application.deleted':
            await flush();
            await run((p) =>
              status(p, k.app(event.applicationId), `a:${event.applicationId}`, ['deleted', '1']),
            );
            break;
          case 'apiKey.created':
            await flush();
            await applyKeyCreated(event);
            break;
          case 'apiKey.revoked':
            await flush();
            await applyKeyRevoked(event.keyId);
            break;
        }
      }
      await flush();
      return effects;
    },
  };
}

/** A fact a key's or an application's status copies. */
const isStatusFact = (e: AccessEvent): boolean =>
  e.type.startsWith('apiKey.') || e.type.startsWith('application.');
