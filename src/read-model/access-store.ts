import { isKeyLive, mayAccess, type OwnerType } from '../domain/access-rule.js';
import { accessFactKeys } from './access-facts.js';
import { execOrThrow } from './exec.js';
import {
  aclGenerationKey,
  changeChannel,
  installationField,
  keyViewGenerationKey,
  parseInstallationField,
  type ReadModelKeys,
} from './keys.js';
import type { RedisClient } from './redis-connection.js';
import { scriptedPipeline, withScripts } from './scripts.js';

// The derived views of the access facts: acl(installation) and keyView(keyHash). They are
// recomputed per application from all its facts, so the result does not depend on the order
// facts arrived in; each write touches one slot and carries the recompute's generation, so a
// concurrent or interrupted recompute never leaves an older result standing.

export interface AccessViewStore {
  /** Rewrites the acl entries and keyViews of every key of the application. */
  recomputeApplication(appId: number): Promise<void>;
  /** Applications whose views depend on the installation (they hold a grant for it). */
  applicationsGranted(installationId: number): Promise<number[]>;
}

interface AppFacts {
  readonly owner: { readonly type: OwnerType; readonly id: number };
  readonly enabled: boolean;
  readonly deleted: boolean;
}

interface KeyFacts {
  readonly keyId: string;
  readonly app: number;
  readonly hash: string;
  readonly exp: string;
  readonly revoked: boolean;
}

export function createAccessViewStore(deps: {
  conn: RedisClient;
  keys: ReadModelKeys;
}): AccessViewStore {
  const { keys } = deps;
  const conn = withScripts(deps.conn);
  const facts = accessFactKeys(keys);

  return {
    async applicationsGranted(installationId) {
      return (await conn.smembers(facts.installationGrants(installationId))).map(Number);
    },

    async recomputeApplication(appId) {
      // The generation first: every fact read below is at least as new as any recompute of a
      // lower generation read, so the highest generation's writes are the ones that stand.
      const generation = await conn.incr(facts.appGeneration(appId));
      const [appHash, keyIds, grantIds, retiredHashes] = await Promise.all([
        conn.hgetall(facts.app(appId)),
        conn.smembers(facts.appKeys(appId)),
        conn.smembers(facts.appGrants(appId)),
        conn.smembers(facts.appRetiredHashes(appId)),
      ]);
      const app = appFactsOf(appHash);
      const keyList = await readKeys(keyIds);
      const installations = grantIds.map(Number);
      const members = new Set<number>();
      if (app?.owner.type === 'user') {
        for (const id of await conn.smembers(facts.userInstallations(app.owner.id)))
          members.add(Number(id));
      }
      const records = await Promise.all(
        installations.map(async (i) => {
          const [json, companyId] = await Promise.all([
            conn.get(keys.installation(i)),
            conn.hget(keys.installationMeta(i), 'companyId'),
          ]);
          return { id: i, json, companyId: companyId ? Number(companyId) : null };
        }),
      );
      const readable = app
        ? records.filter(
            (r) =>
              r.json !== null &&
              !app.deleted &&
              mayAccess({
                application: { owner: app.owner, enabled: app.enabled },
                hasGrant: true,
                ownerIsMember: members.has(r.id),
                installationCompanyId: r.companyId,
              }),
          )
        : [];
      const hashes = [...new Set([...keyList.map((k) => k.hash), ...retiredHashes])];
      const previous = new Map(
        await Promise.all(
          hashes.map(
            async (h) => [h, installationsOfView(await conn.hkeys(keys.keyView(h)))] as const,
          ),
        ),
      );
      const live = new Map(
        keyList
          .filter(
            (k) =>
              k.app === appId &&
              app !== null &&
              // Expiry is the API's to check against its clock (the view carries `exp`), so
              // liveness here ignores time: with no expiry given, `now` plays no part.
              isKeyLive({ revoked: k.revoked, expiresAtMs: null }, app, 0),
          )
          .map((k) => [k.hash, k]),
      );
      // Idempotent single-slot writes, each refused if a later recompute already wrote it:
      // they converge whatever order they land in and wherever a crash cuts them (the batch is
      // then retried and recomputes again, with a new generation).
      const pipeline = scriptedPipeline(conn);
      for (const hash of hashes) {
        const key = live.get(hash);
        const now = key ? readable : [];
        const kept = new Set(now.map((r) => r.id));
        for (const id of previous.get(hash) ?? []) {
          if (kept.has(id)) continue;
          pipeline.writeAclEntry(
            keys.acl(id),
            aclGenerationKey(keys, id),
            changeChannel(keys, id),
            hash,
            '',
            generation,
          );
        }
        const view: string[] = [];
        if (key) {
          view.push('app', String(appId), 'exp', key.exp);
          for (const r of now) {
            view.push(installationField(r.id), r.json as string);
            pipeline.writeAclEntry(
              keys.acl(r.id),
              aclGenerationKey(keys, r.id),
              changeChannel(keys, r.id),
              hash,
              key.exp,
              generation,
            );
          }
        }
        pipeline.writeKeyView(
          keys.keyView(hash),
          keyViewGenerationKey(keys, hash),
          generation,
          ...view,
        );
      }
      await execOrThrow(pipeline);
      // Only once every view is written: a retry still knows the retired hashes.
      if (retiredHashes.length > 0)
        await conn.srem(facts.appRetiredHashes(appId), ...retiredHashes);

      async function readKeys(ids: readonly string[]): Promise<KeyFacts[]> {
        const hashes = await Promise.all(ids.map((id) => conn.hgetall(facts.key(id))));
        return hashes.flatMap((h, i) =>
          h.hash
            ? [
                {
                  keyId: ids[i] as string,
                  app: Number(h.app),
                  hash: h.hash,
                  exp: h.exp ?? '0',
                  revoked: h.revoked === '1',
                },
              ]
            : [],
        );
      }
    },
  };
}

function appFactsOf(hash: Record<string, string>): AppFacts | null {
  if (!hash.ownerType || !hash.ownerId) return null;
  return {
    owner: { type: hash.ownerType as OwnerType, id: Number(hash.ownerId) },
    enabled: hash.enabled === '1',
    deleted: hash.deleted === '1',
  };
}

function installationsOfView(fields: readonly string[]): number[] {
  return fields.map(parseInstallationField).filter((id): id is number => id !== null);
}
