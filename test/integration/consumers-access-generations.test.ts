import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AccessEvent } from '../../src/domain/events.js';
import { createAccessFactStore } from '../../src/read-model/access-fact-store.js';
import { accessFactKeys } from '../../src/read-model/access-facts.js';
import { createAccessWork, type WorkPlace } from '../../src/read-model/access-store.js';
import { execOrThrow } from '../../src/read-model/exec.js';
import {
  appViewGenerationKey,
  appViewVersionKey,
  changeChannel,
} from '../../src/read-model/keys.js';
import { duplicateConnection, type RedisClient } from '../../src/read-model/redis-connection.js';
import {
  type ScriptedPipeline,
  type ScriptedRedis,
  scriptedPipeline,
  withScripts,
} from '../../src/read-model/scripts.js';
import { createSeeder, type Seeder } from '../../tools/seed/read-model-seed.js';
import { installation } from '../../tools/seed/records.js';
import { dropPrefix, testRedis, uniqueId } from '../support/stack.js';

// The entries of an (application, installation) pair (its acl entry and its view entry) are
// derived from the access facts by passes that may overlap (two processes, a former owner of
// the partition) and be cut anywhere. Each pass takes a new generation of its application before
// it reads the facts, and every entry write is refused where a later generation stands: whatever
// order two passes' writes land in, the entries end as the facts say.

const prefix = `${uniqueId('accessgen')}:`;
let redis: RedisClient;
let conn: ScriptedRedis;
let seed: Seeder;

beforeAll(async () => {
  redis = testRedis();
  conn = withScripts(duplicateConnection(redis));
  seed = createSeeder(redis, prefix);
});
afterAll(async () => {
  conn?.disconnect();
  await dropPrefix(redis, prefix);
  redis?.disconnect();
});

const run = async (build: (p: ScriptedPipeline) => void) => {
  const p = scriptedPipeline(conn);
  build(p);
  return execOrThrow(p);
};
const aclEntry = (inst: number, app: number, gen: number, allowed: boolean) =>
  run((p) =>
    p.writeAclEntry(seed.keys.acl(inst), changeChannel(seed.keys, inst), app, gen, allowed ? 1 : 0),
  );
/** Writes view entries at `gen`: installationId -> JSON, '' to remove. The number written. */
const viewEntries = async (app: number, gen: number, entries: Record<number, string>) => {
  const argv = [gen, ...Object.entries(entries).flat()];
  const [written] = await run((p) =>
    p.writeViewEntries(
      seed.keys.appView(app),
      appViewGenerationKey(seed.keys, app),
      appViewVersionKey(seed.keys, app),
      argv,
    ),
  );
  return written;
};
const aclOf = (inst: number, app: number) => redis.hget(seed.keys.acl(inst), String(app));
/** The application's view as getInstallations lists it: JSON in id order. */
const viewOf = (app: number) => redis.zrange(seed.keys.appView(app), '0', '-1');
const viewVersion = (app: number) => redis.get(appViewVersionKey(seed.keys, app));

describe('an entry write of an earlier generation than the one stored', () => {
  it('is refused for an acl entry, granted or not', async () => {
    expect(await aclEntry(1, 17, 2, true)).toEqual([1]);
    expect(await aclEntry(1, 17, 1, false)).toEqual([0]);
    expect(await aclOf(1, 17)).toBe('2');
    expect(await aclEntry(1, 17, 3, false)).toEqual([1]);
    // A refusal's generation counts as much as a grant's.
    expect(await aclEntry(1, 17, 2, true)).toEqual([0]);
    expect(await aclOf(1, 17)).toBe('-3');
    // Other applications' entries are their own.
    expect(await aclEntry(1, 18, 1, true)).toEqual([1]);
    expect(await redis.hgetall(seed.keys.acl(1))).toEqual({ '17': '-3', '18': '1' });
  });

  it('is refused for a view entry, entry by entry, and leaves the view version alone', async () => {
    expect(await viewEntries(21, 2, { 1: '{"id":1}', 2: '{"id":2}' })).toBe(2);
    expect(await viewOf(21)).toEqual(['{"id":1}', '{"id":2}']);
    // Installation 1's removal is older than its entry; installation 3 has none yet.
    expect(await viewEntries(21, 1, { 1: '', 3: '{"id":3}' })).toBe(1);
    expect(await viewOf(21)).toEqual(['{"id":1}', '{"id":2}', '{"id":3}']);
    expect(await viewEntries(21, 3, { 2: '' })).toBe(1);
    const version = await viewVersion(21);
    // A removal's generation counts as much as an entry's.
    expect(await viewEntries(21, 2, { 2: '{"id":2,"name":"late"}' })).toBe(0);
    expect(await viewOf(21)).toEqual(['{"id":1}', '{"id":3}']);
    expect(await viewVersion(21)).toBe(version);
  });
});

/**
 * The connection, except that a pipeline writing access entries waits at its exec: `arrived`
 * resolves there (the pass took its generation and read the facts); `release` lets it through,
 * `cut` fails it (the process died before its writes).
 */
function gated(target: RedisClient) {
  let arrive = () => {};
  const arrived = new Promise<void>((resolve) => {
    arrive = resolve;
  });
  let open = (_through: boolean) => {};
  const opened = new Promise<boolean>((resolve) => {
    open = resolve;
  });
  const bound = (object: object, name: string | symbol) => {
    const value = Reflect.get(object, name, object);
    return typeof value === 'function' ? value.bind(object) : value;
  };
  const conn = new Proxy(target, {
    get(client, name) {
      if (name !== 'pipeline') return bound(client, name);
      return () => {
        let writes = false;
        return new Proxy(client.pipeline(), {
          get(pipeline, member) {
            if (member === 'writeAclEntry' || member === 'writeViewEntries') writes = true;
            if (member !== 'exec' || !writes) return bound(pipeline, member);
            return async () => {
              arrive();
              if (!(await opened)) throw new Error('process died (test cut)');
              return pipeline.exec();
            };
          },
        });
      };
    },
  });
  return { conn, arrived, release: () => open(true), cut: () => open(false) };
}

let nextApp = 100;

/** An application owned by a user, granted a fresh installation, the user a member or not. */
async function grantedApplication(member: boolean) {
  const app = nextApp++;
  const [inst, user] = [app * 10, app * 100];
  await seed.installation(installation(inst));
  const facts: AccessEvent[] = [
    {
      type: 'application.upserted',
      occurredAt: new Date().toISOString(),
      applicationId: app,
      owner: { type: 'user', id: user },
      enabled: true,
    },
    {
      type: 'grant.added',
      occurredAt: new Date().toISOString(),
      applicationId: app,
      installationId: inst,
    },
  ];
  if (member)
    facts.push({
      type: 'membership.added',
      occurredAt: new Date().toISOString(),
      userId: user,
      installationId: inst,
    });
  return { app, inst, user, facts, place: { topic: `gen-${app}`, partition: 0 } };
}

const factStore = () => createAccessFactStore({ conn: redis, keys: seed.keys });
const work = () => createAccessWork({ conn: redis, keys: seed.keys });
/** What the access worker does, run until no work is left. */
const drain = async (place: WorkPlace) => {
  const w = work();
  while ((await w.workOnce([place])) > 0);
};

/** The pair's entries: granted and listed, or neither; no work left for the application. */
async function expectEntries(app: number, inst: number, allowed: boolean) {
  const acl = await aclOf(inst, app);
  expect(acl).not.toBeNull();
  expect(Number(acl) > 0).toBe(allowed);
  // Listed as the installation is stored: the JSON getInstallations sends.
  const stored = await redis.get(seed.keys.installation(inst));
  expect(await viewOf(app)).toEqual(allowed ? [stored] : []);
  const k = accessFactKeys(seed.keys);
  expect(await redis.zcard(k.appPending(app))).toBe(0);
}

describe('two overlapping derivations of the same pair', () => {
  it.each([
    { change: 'membership.removed', lands: 'last' },
    { change: 'membership.removed', lands: 'first' },
    { change: 'membership.added', lands: 'last' },
    { change: 'membership.added', lands: 'first' },
  ] as const)(
    'converge to the facts: $change meanwhile, the earlier pass lands $lands',
    async ({ change, lands }) => {
      const facts = factStore();
      const access = work();
      const given = await grantedApplication(change === 'membership.removed');
      await access.record(await facts.applyAll(given.facts), given.place);

      // A pass reads the facts as they stand, then stalls before its writes.
      const early = gated(redis);
      const earlyPass = createAccessWork({ conn: early.conn, keys: seed.keys }).workOnce([
        given.place,
      ]);
      await early.arrived;
      const changed: AccessEvent = {
        type: change,
        occurredAt: new Date().toISOString(),
        userId: given.user,
        installationId: given.inst,
      };
      await access.record(await facts.applyAll([changed]), given.place);

      if (lands === 'first') {
        early.release();
        expect(await earlyPass).toBe(1);
      }
      // A later pass (another process, the partition's new owner) derives the changed facts.
      await drain(given.place);
      if (lands === 'last') {
        early.release();
        expect(await earlyPass).toBe(1);
      }
      await drain(given.place);
      await expectEntries(given.app, given.inst, change === 'membership.added');
    },
  );

  it('resume a pass cut before its writes: the pair stays recorded until derived', async () => {
    const facts = factStore();
    const given = await grantedApplication(true);
    await work().record(await facts.applyAll(given.facts), given.place);
    const cut = gated(redis);
    const cutPass = createAccessWork({ conn: cut.conn, keys: seed.keys }).workOnce([given.place]);
    await cut.arrived;
    cut.cut();
    await expect(cutPass).rejects.toThrow('test cut');
    expect(await aclOf(given.inst, given.app)).toBeNull();
    await drain(given.place);
    await expectEntries(given.app, given.inst, true);
  });

  it('complete a pass cut half way, its acl entry written and its view entry not', async () => {
    const facts = factStore();
    const given = await grantedApplication(true);
    await work().record(await facts.applyAll(given.facts), given.place);
    // The pass took its generation and wrote the acl entry, then the process died.
    const gen = await redis.incr(accessFactKeys(seed.keys).appGeneration(given.app));
    await aclEntry(given.inst, given.app, gen, true);
    expect(await viewOf(given.app)).toEqual([]);
    await drain(given.place);
    await expectEntries(given.app, given.inst, true);
    expect(Number(await aclOf(given.inst, given.app))).toBeGreaterThan(gen);
  });
});
