import type { Redis } from 'ioredis';
import { isKeyLive, mayAccess, type OwnerType } from '../domain/access-rule.js';
import { accessFactKeys } from './access-facts.js';
import { installationField, parseInstallationField, type ReadModelKeys } from './keys.js';
import { optimistic } from './optimistic.js';

// The derived views of the access facts: acl(installation) and keyView(keyHash). They are
// recomputed per application from all its facts, in an optimistic transaction over every key
// read, so the result does not depend on the order facts arrived in, nor on a concurrent writer.

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

export function createAccessViewStore(deps: { conn: Redis; keys: ReadModelKeys }): AccessViewStore {
  const { conn, keys } = deps;
  const facts = accessFactKeys(keys);

  return {
    async applicationsGranted(installationId) {
      return (await conn.smembers(facts.installationGrants(installationId))).map(Number);
    },

    recomputeApplication(appId) {
      return optimistic(conn, async (watcher) => {
        await watcher.watch([
          facts.app(appId),
          facts.appKeys(appId),
          facts.appGrants(appId),
          facts.appRetiredHashes(appId),
        ]);
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
          await watcher.watch([facts.userInstallations(app.owner.id)]);
          for (const id of await conn.smembers(facts.userInstallations(app.owner.id)))
            members.add(Number(id));
        }
        await watcher.watch(
          installations.flatMap((i) => [keys.installation(i), keys.installationMeta(i)]),
        );
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
        await watcher.watch(hashes.map((h) => keys.keyView(h)));
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
        return {
          result: undefined,
          write: (multi) => {
            multi.del(facts.appRetiredHashes(appId));
            for (const hash of hashes) {
              const key = live.get(hash);
              const before = previous.get(hash) ?? [];
              multi.del(keys.keyView(hash));
              const now = key ? readable : [];
              const kept = new Set(now.map((r) => r.id));
              for (const id of before) if (!kept.has(id)) multi.hdel(keys.acl(id), hash);
              if (!key) continue;
              const view: Record<string, string> = { app: String(appId), exp: key.exp };
              for (const r of now) {
                view[installationField(r.id)] = r.json as string;
                multi.hset(keys.acl(r.id), hash, key.exp);
              }
              multi.hset(keys.keyView(hash), view);
            }
          },
        };

        async function readKeys(ids: readonly string[]): Promise<KeyFacts[]> {
          await watcher.watch(ids.map((id) => facts.key(id)));
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
      });
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
