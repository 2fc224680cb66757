import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeEpoch } from '../../src/read-model/epoch.js';
import { appViewVersionKey, createKeys, epochKey } from '../../src/read-model/keys.js';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { monitorRedis, type RedisMonitor } from '../support/redis-monitor.js';
import { testRedis, waitFor } from '../support/stack.js';
import { refusedWithin } from '../support-api/access-ends.js';
import { testApi } from '../support-api/api-harness.js';
import { readsStatus, untilStatusesKept } from '../support-api/key-statuses.js';

// getInstallations through the view cache (api/reader/view-cache.ts), against a read model
// written by the consumers' own stores. Pages are kept per application and page size, each with
// the version of the application's view it was read at: once the key is judged from memory, a
// repeated request costs one GET of that version and answers the same bytes; every write of the
// view (a grant, a renamed installation) is served on the very next request, with no
// announcement to wait for; a revoked key is refused within 1 s (beyond.md §5) while another key
// of the application is still served; expiry is judged per request; a rebuild underneath drops
// what is kept.
describe('API view cache (getInstallations)', () => {
  let nowMs = Date.now();
  const api = testApi({ clock: () => nowMs });
  const base = api.config.api.basePath;
  const keys = createKeys(api.prefix);
  let monitor: RedisMonitor;
  let nextId = 700;

  const list = (key: string, query = '') =>
    api.app.inject({ url: `${base}/getInstallations${query}`, headers: { 'api-key': key } });
  const names = async (key: string) =>
    ((await list(key)).json().installations as Array<{ name: string }>).map((i) => i.name);
  /** The commands Redis ran for one getInstallations by `key`. */
  const workOf = async (key: string, query = '') => {
    await monitor.take();
    const res = await list(key, query);
    // The API's epoch check runs on its own clock, not per request.
    const epoch = epochKey(keys);
    const commands = (await monitor.take()).filter((args) => !args.includes(epoch));
    return { res, commands };
  };
  /** Requests by `key` until its statuses are kept: from then on only the view is read. */
  const settled = (key: string) => untilStatusesKept(async () => (await workOf(key)).commands);
  const keyWith = async (count: number, options: { expiresAtMs?: number } = {}) => {
    const key = newApiKey();
    const app = nextId;
    const granted = Array.from({ length: count }, () => installation(nextId++));
    for (const record of granted) await api.seed.installation(record);
    await api.seed.liveKey(key, { app, installations: granted, ...options });
    return { key, app, granted };
  };
  const versionRead = (app: number) => [['get', appViewVersionKey(keys, app)]];

  beforeAll(async () => {
    await api.ready();
    monitor = await monitorRedis(api.prefix);
  });
  afterAll(async () => {
    monitor.stop();
    await api.close();
  });

  it('answers a repeated request after one GET of the version, the same bytes and ETag', async () => {
    const { key, app } = await keyWith(3);
    await settled(key);
    const first = await workOf(key);
    expect(first.res.statusCode).toBe(200);
    const again = await workOf(key);
    expect(again.res.body).toBe(first.res.body);
    expect(again.res.headers.etag).toBe(first.res.headers.etag);
    expect(again.commands).toEqual(versionRead(app));
  });

  it('reads the version once for requests of one application that arrive together', async () => {
    const { key, app } = await keyWith(2);
    await settled(key);
    const first = await list(key);
    await monitor.take();
    const together = await Promise.all([list(key), list(key), list(key)]);
    for (const res of together) expect(res.body).toBe(first.body);
    const commands = (await monitor.take()).filter((args) => !args.includes(epochKey(keys)));
    expect(commands).toEqual(versionRead(app));
  });

  it('shares the pages kept between the keys of one application, one per page size', async () => {
    const { key, app, granted } = await keyWith(3);
    await settled(key);
    const first = await list(key);
    const other = newApiKey();
    await api.seed.liveKey(other, { app, installations: granted });
    // The other key's own status is read; the page is the one kept, checked by its version.
    const shared = await workOf(other);
    expect(shared.res.body).toBe(first.body);
    expect(shared.commands.filter((args) => !readsStatus(args))).toEqual(versionRead(app));
    // Another page size is another entry: read once, then kept like the first.
    const paged = await workOf(key, '?limit=2');
    expect(paged.res.json().installations).toHaveLength(2);
    expect(paged.commands.length).toBeGreaterThan(1);
    const pagedAgain = await workOf(key, '?limit=2');
    expect(pagedAgain.res.body).toBe(paged.res.body);
    expect(pagedAgain.commands).toEqual(versionRead(app));
  });

  it('serves a new grant and a renamed installation on the next request', async () => {
    const { key, app, granted } = await keyWith(2);
    const before = await list(key);
    expect(before.json().installations).toHaveLength(2);
    const added = installation(nextId++);
    await api.seed.installation(added);
    await api.seed.liveKey(key, { app, installations: [...granted, added] });
    const after = await list(key);
    expect(after.json().installations.map((i: { id: number }) => i.id)).toEqual(
      [...granted, added].map((i) => i.id),
    );
    expect(after.headers.etag).not.toBe(before.headers.etag);
    await api.seed.installation(installation(added.id, { name: 'Renamed' }));
    expect(await names(key)).toContain('Renamed');
  });

  it('answers a revoked key 401 within 1 s, and still serves another key of its application', async () => {
    const { key, app, granted } = await keyWith(1);
    const other = newApiKey();
    await api.seed.liveKey(other, { app, installations: granted });
    const served = await list(other);
    await settled(key);
    expect((await workOf(key)).commands).toEqual(versionRead(app));
    await api.seed.revokeKey(key);
    await refusedWithin('revoked', Date.now(), async () => (await list(key)).statusCode, 401);
    const still = await list(other);
    expect([still.statusCode, still.body]).toEqual([200, served.body]);
  });

  it('judges expiry per request: 401 past the key expiry with the page kept', async () => {
    const { key, app } = await keyWith(1, { expiresAtMs: nowMs + 60_000 });
    expect((await list(key)).statusCode).toBe(200);
    await settled(key);
    expect((await workOf(key)).commands).toEqual(versionRead(app));
    nowMs += 61_000;
    try {
      expect((await list(key)).statusCode).toBe(401);
    } finally {
      nowMs = Date.now();
    }
  });

  it('drops what it keeps when the read model is rebuilt underneath (a new epoch marker)', async () => {
    const { key, app, granted } = await keyWith(1);
    await list(key);
    // The epoch watch must have read the marker once before the rebuild changes it.
    const watch = await monitorRedis(api.prefix, []);
    try {
      await waitFor('a check of the epoch marker', async () =>
        (await watch.take()).some((args) => args.includes(epochKey(keys))) ? true : undefined,
      );
    } finally {
      watch.stop();
    }
    const redis = testRedis();
    try {
      // A rebuild that replayed fewer grants: same version, other content, no announcement.
      const id = (granted[0] as { id: number }).id;
      await redis.zremrangebyscore(keys.appView(app), id, id);
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
