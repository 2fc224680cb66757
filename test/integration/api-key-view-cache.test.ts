import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EPOCH_CHECK_MS } from '../../api/read-model/epoch-watch.js';
import { hashApiKey } from '../../src/domain/access-rule.js';
import { writeEpoch } from '../../src/read-model/epoch.js';
import { createKeys, epochKey, keyViewGenerationKey } from '../../src/read-model/keys.js';
import { monitorRedis, type RedisMonitor } from '../support/redis-monitor.js';
import { testRedis, waitFor } from '../support/stack.js';
import { testApi } from '../support-api/api-harness.js';
import { installation, newApiKey } from '../support-api/fixtures.js';

// getInstallations through the key view cache (api/read-model/key-view-cache.ts), against a
// read model written by the consumers' own stores: a repeated request costs one GET of the view's
// generation and answers the same bytes; every write of the view (a grant, a renamed
// installation, a revocation) is served on the very next request, with no announcement to wait
// for; expiry is judged per request; a rebuild underneath drops what is kept.
describe('API key view cache (getInstallations)', () => {
  let nowMs = Date.now();
  const api = testApi({ clock: () => nowMs });
  const base = api.config.api.basePath;
  const keys = createKeys(api.prefix);
  let monitor: RedisMonitor;
  let nextId = 700;

  const list = (key: string) =>
    api.app.inject({ url: `${base}/getInstallations`, headers: { 'api-key': key } });
  const names = async (key: string) =>
    ((await list(key)).json().installations as Array<{ name: string }>).map((i) => i.name);
  /** The commands Redis ran for one getInstallations by `key`. */
  const workOf = async (key: string) => {
    await monitor.take();
    const res = await list(key);
    // The API's epoch check runs on its own clock, not per request.
    const epoch = epochKey(keys);
    const commands = (await monitor.take()).filter((args) => !args.includes(epoch));
    return { res, commands };
  };
  const keyWith = async (count: number, options: { expiresAtMs?: number } = {}) => {
    const key = newApiKey();
    const app = nextId;
    const granted = Array.from({ length: count }, () => installation(nextId++));
    for (const record of granted) await api.seed.installation(record);
    await api.seed.liveKey(key, { app, installations: granted, ...options });
    return { key, granted };
  };

  beforeAll(async () => {
    await api.ready();
    monitor = await monitorRedis(api.prefix);
  });
  afterAll(async () => {
    monitor.stop();
    await api.close();
  });

  it('answers a repeated request after one GET of the generation, the same bytes and ETag', async () => {
    const { key } = await keyWith(3);
    const first = await workOf(key);
    expect(first.res.statusCode).toBe(200);
    const again = await workOf(key);
    expect(again.res.body).toBe(first.res.body);
    expect(again.res.headers.etag).toBe(first.res.headers.etag);
    expect(again.commands).toEqual([['get', keyViewGenerationKey(keys, hashApiKey(key))]]);
  });

  it('reads the generation once for requests of one key that arrive together', async () => {
    const { key } = await keyWith(2);
    const first = await list(key);
    await monitor.take();
    const together = await Promise.all([list(key), list(key), list(key)]);
    for (const res of together) expect(res.body).toBe(first.body);
    const commands = (await monitor.take()).filter((args) => !args.includes(epochKey(keys)));
    expect(commands).toEqual([['get', keyViewGenerationKey(keys, hashApiKey(key))]]);
  });

  it('serves a new grant and a renamed installation on the next request', async () => {
    const { key, granted } = await keyWith(2);
    const before = await list(key);
    expect(before.json().installations).toHaveLength(2);
    const added = installation(nextId++);
    await api.seed.installation(added);
    await api.seed.liveKey(key, {
      app: granted[0]?.id as number,
      installations: [...granted, added],
    });
    const after = await list(key);
    expect(after.json().installations.map((i: { id: number }) => i.id)).toEqual(
      [...granted, added].map((i) => i.id),
    );
    expect(after.headers.etag).not.toBe(before.headers.etag);
    await api.seed.installation(installation(added.id, { name: 'Renamed' }));
    expect(await names(key)).toContain('Renamed');
  });

  it('answers 401 on the next request after the key is revoked', async () => {
    const { key } = await keyWith(1);
    await list(key);
    expect((await workOf(key)).commands).toHaveLength(1);
    await api.seed.revokeKey(key);
    expect((await list(key)).statusCode).toBe(401);
  });

  it('judges expiry per request: 401 past the key expiry with the view kept', async () => {
    const { key } = await keyWith(1, { expiresAtMs: nowMs + 60_000 });
    expect((await list(key)).statusCode).toBe(200);
    expect((await workOf(key)).commands).toHaveLength(1);
    nowMs += 61_000;
    try {
      expect((await list(key)).statusCode).toBe(401);
    } finally {
      nowMs = Date.now();
    }
  });

  it('drops what it keeps when the read model is rebuilt underneath (a new epoch marker)', async () => {
    const { key } = await keyWith(1);
    await list(key);
    // The epoch watch must have read the marker once before the rebuild changes it.
    await new Promise((resolve) => setTimeout(resolve, 2 * EPOCH_CHECK_MS));
    const redis = testRedis();
    try {
      // A rebuild that replayed fewer grants: same generation, other content, no announcement.
      const hash = hashApiKey(key);
      const view = keys.keyView(hash);
      const field = (await redis.hkeys(view)).find((f) => f.startsWith('i:')) as string;
      await redis.hdel(view, field);
      expect((await list(key)).json().installations).toHaveLength(1);
      await writeEpoch(redis, keys, Date.now(), { replace: true });
      await waitFor(
        'the rebuilt view',
        async () => ((await list(key)).json().installations.length === 0 ? true : undefined),
        5_000,
      );
    } finally {
      redis.disconnect();
    }
  });
});
