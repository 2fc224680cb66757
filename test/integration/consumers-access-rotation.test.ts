import { afterAll, beforeAll, expect, it } from 'vitest';
import { hashApiKey, isKeyLive } from '../../src/domain/access-rule.js';
import type { AccessEvent } from '../../src/domain/events.js';
import { createAccessFactStore } from '../../src/read-model/access-fact-store.js';
import { decodeKeyExpiry } from '../../src/read-model/key-status-codec.js';
import type { ReadModelKeys } from '../../src/read-model/keys.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import { createSeeder } from '../../tools/seed/read-model-seed.js';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { dropPrefix, testRedis, uniqueId } from '../support/stack.js';

// A key re-created with a new hash (a rotation) must stop the old hash working, also when the
// batch that carries it fails part way and is retried: the retry applies the fact again, and may
// then find the new hash already stored, so the old hash's revocation cannot wait for it. The
// application's entries are untouched by a rotation: the new key reads what the old one did.

let redis: RedisClient;
const prefix = `${uniqueId('rotation')}:`;

beforeAll(() => {
  redis = testRedis();
});
afterAll(async () => {
  await dropPrefix(redis, prefix);
  redis.disconnect();
});

/**
 * The connection, except that its pipelines fail once `writes` of them have run: a batch cut
 * part way (Redis gone), whose later pipelines never reach Redis.
 */
function cutAfter(conn: RedisClient, writes: number): RedisClient {
  let ran = 0;
  const bound = (target: object, name: string | symbol) => {
    const value = Reflect.get(target, name, target);
    return typeof value === 'function' ? value.bind(target) : value;
  };
  return new Proxy(conn, {
    get(target, name) {
      if (name !== 'pipeline') return bound(target, name);
      return () =>
        new Proxy(target.pipeline(), {
          get(pipeline, member) {
            if (member !== 'exec') return bound(pipeline, member);
            return async () => {
              if (ran >= writes) throw new Error('connection lost (test cut)');
              ran++;
              return pipeline.exec();
            };
          },
        });
    },
  });
}

/** Whether the key works now, from its status and its application's (what the API checks). */
async function live(keys: ReadModelKeys, hash: string): Promise<boolean> {
  const k = await redis.hgetall(keys.keyStatus(hash));
  const expiresAtMs = decodeKeyExpiry(k.exp ?? null, k.v ?? null);
  if (k.app === undefined || expiresAtMs === undefined) return false;
  const a = await redis.hgetall(keys.appStatus(Number(k.app)));
  return isKeyLive(
    { revoked: k.revoked !== '0', expiresAtMs },
    a.enabled === undefined ? null : { enabled: a.enabled === '1', deleted: a.deleted === '1' },
    Date.now(),
  );
}

// 0: the first pipeline fails (nothing written); 1: the old key's revocation is written, the
// new fact is not; 99: every write ran, then the batch's commit failed.
it.each([0, 1, 99])(
  'revokes the old hash after a rotation retried once its batch was cut after %i writes',
  async (cut) => {
    const app = 700 + cut;
    const id = 4200 + cut;
    const seed = createSeeder(redis, prefix);
    const record = installation(id);
    await seed.installation(record);
    const oldKey = newApiKey();
    const oldHash = await seed.liveKey(oldKey, { app, installations: [record] });
    expect(await live(seed.keys, oldHash)).toBe(true);
    const granted = async () => Number(await redis.hget(seed.keys.acl(id), String(app)));
    expect(await granted()).toBeGreaterThan(0);

    const newHash = hashApiKey(newApiKey());
    const rotation: AccessEvent = {
      type: 'apiKey.created',
      occurredAt: new Date().toISOString(),
      keyId: `key-${oldHash.slice(0, 16)}`,
      applicationId: app,
      keyHash: newHash,
      expiresAt: null,
    };
    const first = createAccessFactStore({ conn: cutAfter(redis, cut), keys: seed.keys });
    await first.applyAll([rotation]).catch(() => undefined);
    // The batch is retried from its first message, on a connection that works.
    const retry = createAccessFactStore({ conn: redis, keys: seed.keys });
    const effects = await retry.applyAll([rotation]);
    expect(effects.pairs.size + effects.sweeps.size).toBe(0);

    expect(await redis.hgetall(seed.keys.keyStatus(oldHash))).toEqual({
      app: String(app),
      exp: '',
      revoked: '1',
      v: '2',
    });
    expect(await live(seed.keys, oldHash)).toBe(false);
    expect(await redis.hgetall(seed.keys.keyStatus(newHash))).toEqual({
      app: String(app),
      exp: '',
      revoked: '0',
      v: '2',
    });
    expect(await live(seed.keys, newHash)).toBe(true);
    // The application still reads the installation: the new key reads what the old one did.
    expect(await granted()).toBeGreaterThan(0);
    const view = await redis.zrange(seed.keys.appView(app), String(id), String(id), 'BYSCORE');
    expect(view.map((json) => JSON.parse(json))).toMatchObject([{ id, name: record.name }]);
  },
);
