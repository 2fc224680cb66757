import { mayAccess, type OwnerType } from '../domain/access-rule.js';
import type { AccessEffects } from './access-fact-store.js';
import { accessFactKeys } from './access-facts.js';
import { execOrThrow } from './exec.js';
import {
  appViewGenerationKey,
  appViewVersionKey,
  changeChannel,
  type ReadModelKeys,
} from './keys.js';
import type { RedisClient } from './redis-connection.js';
import { scriptedPipeline, withScripts } from './scripts.js';

// The entries derived from the access facts, one per (application, installation) pair: the
// installation's acl entry (may the application read it) and the application's view entry
// (its Installation JSON, for getInstallations). A fact records the pairs it may change
// (`record`); the owner of the partition that carried it derives them in bounded chunks
// (`workOnce`), off the batch's path, so no application's size holds up another's facts and a
// crash resumes where the recorded work stands. Each chunk takes a new generation of its
// application before it reads the facts, and every entry write is refused where a later
// generation stands: passes that overlap (two processes, a former owner) converge to the facts.

/** Where a partition's recorded work lives: its topic and partition. */
export interface WorkPlace {
  readonly topic: string;
  readonly partition: number;
}

export interface AccessWork {
  /** Records what the facts may change, for the partition's owner to derive. */
  record(effects: AccessEffects, place: WorkPlace): Promise<void>;
  /** Per installation, the applications holding a grant for it. */
  applicationsGranted(installationIds: readonly number[]): Promise<number[][]>;
  /** One chunk of every application with work at these places; the entries derived. */
  workOnce(places: readonly WorkPlace[]): Promise<number>;
}

/** Pairs derived per chunk: bounds one pass's Redis work and every script's arguments. */
export const ACCESS_CHUNK = 500;
const APPS_AT_ONCE = 8;

interface Owner {
  readonly type: OwnerType;
  readonly id: number;
}

export function createAccessWork(deps: {
  conn: RedisClient;
  keys: ReadModelKeys;
  /** The sampled span writing, announced with each change (change-feed.ts); absent: untraced. */
  traceparent?: () => string | undefined;
}): AccessWork {
  const { keys } = deps;
  const conn = withScripts(deps.conn);
  const k = accessFactKeys(keys);

  /** Derives and writes the entries of (app, id) for each id, at generation `gen`. */
  async function derive(
    app: number,
    owner: Owner | null,
    ids: readonly number[],
    gen: number,
  ): Promise<void> {
    if (ids.length === 0) return;
    const facts = scriptedPipeline(conn);
    facts.smismember(k.appGrants(app), ...ids);
    if (owner?.type === 'user') facts.smismember(k.userInstallations(owner.id), ...ids);
    const [granted, members = null] = (await execOrThrow(facts)) as [number[], number[]?];
    // Each installation's list of the applications granted it, before its record is read, in
    // its slot and in this order: an upsert after the list changed re-records the pair; one
    // before it is what the read below sees.
    const reads = scriptedPipeline(conn);
    ids.forEach((id, i) => {
      if (granted[i] === 1) reads.sadd(k.installationGrants(id), app);
      else reads.srem(k.installationGrants(id), app);
      reads.get(keys.installation(id));
      reads.hget(keys.installationMeta(id), 'companyId');
    });
    const replies = await execOrThrow(reads);
    const writes = scriptedPipeline(conn);
    const view: Array<string | number> = [gen];
    const traceparent = deps.traceparent?.();
    ids.forEach((id, i) => {
      const json = replies[3 * i + 1] as string | null;
      const company = replies[3 * i + 2] as string | null;
      const allowed =
        owner !== null &&
        json !== null &&
        mayAccess({
          // Enabled and deleted are the status's to decide, at read time.
          application: { owner, enabled: true },
          hasGrant: granted[i] === 1,
          ownerIsMember: members?.[i] === 1,
          installationCompanyId: company ? Number(company) : null,
        });
      const acl = keys.acl(id);
      const channel = changeChannel(keys, id);
      if (traceparent === undefined)
        writes.writeAclEntry(acl, channel, app, gen, allowed ? '1' : '0');
      else writes.writeAclEntry(acl, channel, app, gen, allowed ? '1' : '0', traceparent);
      view.push(id, allowed ? (json as string) : '');
    });
    writes.writeViewEntries(
      keys.appView(app),
      appViewGenerationKey(keys, app),
      appViewVersionKey(keys, app),
      view,
    );
    await execOrThrow(writes);
  }

  /** One chunk of the application's sweep, else of its pending pairs; the entries derived. */
  async function chunkOf(app: number): Promise<number> {
    // One round trip, all in the application's slot and in this order: the generation is taken
    // before any fact is read.
    const [gen, sweep, owner, pending] = (await execOrThrow(
      conn
        .multi()
        .incr(k.appGeneration(app))
        .hmget(k.appSweep(app), 'seq', 'cursor')
        .hmget(k.app(app), 'ownerType', 'ownerId')
        .zrange(k.appPending(app), '0', String(ACCESS_CHUNK - 1), 'WITHSCORES'),
    )) as [number, [string | null, string | null], [string | null, string | null], string[]];
    const [seq, cursor] = sweep;
    const current =
      owner[0] && owner[1] ? { type: owner[0] as OwnerType, id: Number(owner[1]) } : null;
    if (seq) {
      const [next, members] = await conn.sscan(
        k.appGrants(app),
        cursor ?? '0',
        'COUNT',
        ACCESS_CHUNK,
      );
      const ids = members.map(Number);
      await derive(app, current, ids, gen);
      await conn.advanceSweep(k.appSweep(app), seq, next);
      // A sweep whose last chunk was empty still counts as work done.
      return Math.max(ids.length, 1);
    }
    const ids: number[] = [];
    for (let i = 0; i < pending.length; i += 2) ids.push(Number(pending[i]));
    await derive(app, current, ids, gen);
    if (pending.length > 0) await conn.completePairs(k.appPending(app), ...pending);
    return ids.length;
  }

  /**
   * Takes the application off the place's work once it has none; the recheck after it closes
   * the race with a `record` in between.
   */
  async function settle(app: number, work: string): Promise<void> {
    await conn.srem(work, app);
    const [pending, sweep] = await Promise.all([
      conn.zcard(k.appPending(app)),
      conn.exists(k.appSweep(app)),
    ]);
    if (pending > 0 || sweep > 0) await conn.sadd(work, app);
  }

  return {
    async applicationsGranted(installationIds) {
      if (installationIds.length === 0) return [];
      const p = scriptedPipeline(conn);
      for (const id of installationIds) p.smembers(k.installationGrants(id));
      return (await execOrThrow(p)).map((apps) => (apps as string[]).map(Number));
    },

    async record(effects, place) {
      if (effects.pairs.size === 0 && effects.sweeps.size === 0) return;
      const p = scriptedPipeline(conn);
      for (const [app, ids] of effects.pairs) {
        const list = [...ids];
        for (let i = 0; i < list.length; i += ACCESS_CHUNK) {
          p.enqueuePairs(
            k.appPending(app),
            k.appGeneration(app),
            ...list.slice(i, i + ACCESS_CHUNK),
          );
        }
      }
      // A new seq restarts a sweep under way: its owner may have changed again.
      for (const app of effects.sweeps)
        p.hset(k.appSweep(app), 'seq', `${Date.now()}-${Math.random()}`, 'cursor', '0');
      await execOrThrow(p);
      // Only once the work itself is recorded: whoever finds the application here finds it.
      const apps = new Set([...effects.pairs.keys(), ...effects.sweeps]);
      await conn.sadd(k.work(place.topic, place.partition), ...apps);
    },

    async workOnce(places) {
      let derived = 0;
      for (const place of places) {
        const work = k.work(place.topic, place.partition);
        const apps = (await conn.smembers(work)).map(Number);
        // A few applications at once: many small ones (a batch of memberships) then cost a few
        // round trips each in parallel, not one after the other.
        for (let i = 0; i < apps.length; i += APPS_AT_ONCE) {
          const counts = await Promise.all(
            apps.slice(i, i + APPS_AT_ONCE).map(async (app) => {
              const done = await chunkOf(app);
              if (done === 0) await settle(app, work);
              return done;
            }),
          );
          for (const n of counts) derived += n;
        }
      }
      return derived;
    },
  };
}
