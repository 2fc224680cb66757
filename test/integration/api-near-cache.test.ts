import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { etagOf } from '../../api/http/etag.js';
import { hashApiKey } from '../../src/domain/access-rule.js';
import { writeEpoch } from '../../src/read-model/epoch.js';
import { createKeys, epochKey } from '../../src/read-model/keys.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { killSubscribers, monitorRedis, type RedisMonitor } from '../support/redis-monitor.js';
import { testRedis, waitFor } from '../support/stack.js';
import { refusedWithin } from '../support-api/access-ends.js';
import { testApi } from '../support-api/api-harness.js';

// The near-cache (api/near-cache/near-cache.ts) against real Redis, written by the consumers'
// own stores: a warm installation is served without Redis; every change the consumers write is
// served next (the change feed empties the entry, which the next read refills); revocation
// within 1 s; time is evaluated per request; a lost subscriber connection drops everything;
// refusals cost the same whatever is cached.
describe('API near-cache', () => {
  let nowMs = Date.now();
  const api = testApi({ clock: () => nowMs });
  const base = api.config.api.basePath;
  const window = api.config.ingest.onlineWindowSeconds;
  const owner = newApiKey();
  const stranger = newApiKey();
  let nextId = 500;
  let monitor: RedisMonitor;
  const epoch = epochKey(createKeys(api.prefix));
  /** The commands Redis ran for `request`, but the API's epoch check (on its own clock). */
  const commandsOf = async <T>(request: () => Promise<T>) => {
    await monitor.take();
    const result = await request();
    const commands = (await monitor.take()).filter((args) => !args.includes(epoch));
    return { result, commands };
  };

  const get = (path: string, key = owner) =>
    api.app.inject({ url: `${base}${path}`, headers: { 'api-key': key } });
  const flowPath = (id: number) => `/getInstallationCurrentEnergyFlow?installationId=${id}`;
  const devicesPath = (id: number) => `/getInstallationDevices?installationId=${id}`;
  const battery = (id: number, soe: number, lastSeenMs = nowMs) =>
    api.seed.devices(
      id,
      [
        {
          category: 'battery',
          record: device('battery', id, id, lastSeenMs, { soe, powerDc: 10 }),
        },
      ],
      nowMs,
      window,
    );
  const readable = async (key = newApiKey()) => {
    const id = nextId++;
    await api.seed.installation(installation(id));
    await api.seed.liveKey(key, { app: id, installations: [installation(id)] });
    await battery(id, 40);
    return { id, key };
  };
  /** Requests until one is served from memory (the cache fills after a read the key passed). */
  const warm = (path: string, key: string) =>
    waitFor('a warm entry', async () => {
      const { result: res, commands } = await commandsOf(() => get(path, key));
      expect(res.statusCode).toBe(200);
      return commands.length === 0 ? res : undefined;
    });
  const soeOf = async (id: number, key: string) =>
    (await get(flowPath(id), key)).json().data?.batterySoe;

  beforeAll(async () => {
    await api.ready();
    await api.seed.liveKey(stranger, { app: 1, installations: [] });
    monitor = await monitorRedis(api.prefix);
  });
  afterAll(async () => {
    monitor.stop();
    await api.close();
  });

  it('serves a warm installation without a Redis command, the same bytes as a cold read', async () => {
    const { id, key } = await readable();
    const { result: cold, commands } = await commandsOf(async () => [
      await get(devicesPath(id), key),
      await get(flowPath(id), key),
    ]);
    expect(commands.length).toBeGreaterThan(0);
    const hot = [await warm(devicesPath(id), key), await warm(flowPath(id), key)];
    expect(hot.map((r) => r.body)).toEqual(cold.map((r) => r.body));
    expect(hot.map((r) => r.headers.etag)).toEqual(cold.map((r) => r.headers.etag));
  });

  it('serves what the consumers wrote on the next request after the write', async () => {
    const { id, key } = await readable();
    await warm(flowPath(id), key);
    await battery(id, 77);
    // The announcement travels on another connection than the write's acknowledgement.
    await waitFor(
      'the new flow',
      async () => ((await soeOf(id, key)) === 77 ? true : undefined),
      1_000,
    );
    await warm(devicesPath(id), key);
    await api.seed.installation(installation(id));
    await battery(id, 78);
    await waitFor(
      'the new devices',
      async () =>
        (await get(devicesPath(id), key)).json().batteries[0].soe === 78 ? true : undefined,
      1_000,
    );
  });

  it('refills a changed entry with one read and no new subscription, then serves it from memory', async () => {
    const { id, key } = await readable();
    await warm(flowPath(id), key);
    await monitor.take();
    await battery(id, 55);
    const written = await monitor.take();
    // Served from memory until the announcement lands, then read once and kept.
    await waitFor(
      'the new flow',
      async () => ((await soeOf(id, key)) === 55 ? true : undefined),
      1_000,
    );
    const reads = (await monitor.take()).filter((args) => !args.includes(epoch));
    const subscriptions = [...written, ...reads].filter(([name]) =>
      /^s?(un)?subscribe$/i.test(name as string),
    );
    expect(subscriptions).toEqual([]);
    // One read script (the commands it runs show too): no second read to warm the entry.
    expect(reads.filter(([name]) => /^evalsha$/i.test(name as string))).toHaveLength(1);
    const { result, commands } = await commandsOf(() => get(flowPath(id), key));
    expect(result.json().data.batterySoe).toBe(55);
    expect(commands).toEqual([]);
  });

  it('lets go of an installation written twice with no read from memory between', async () => {
    const { id, key } = await readable();
    await warm(flowPath(id), key);
    await battery(id, 41);
    await battery(id, 42);
    // Holding it would cost a message per write and a snapshot per refill for no hit.
    const seen: unknown[][] = [];
    await waitFor(
      'the channel released',
      async () => {
        seen.push(...(await monitor.take()));
        return seen.some(([name]) => /^s?unsubscribe$/i.test(String(name))) ? true : undefined;
      },
      1_000,
    );
    // Read from Redis again, with the last write.
    const { result, commands } = await commandsOf(() => get(flowPath(id), key));
    expect(result.json().data.batterySoe).toBe(42);
    expect(commands.filter(([name]) => /^evalsha$/i.test(String(name))).length).toBeGreaterThan(0);
  });

  it('counts its hits, misses, warms and releases in the metrics', async () => {
    const metric = async (pattern: RegExp) =>
      Number(pattern.exec((await api.app.inject({ url: '/metrics' })).body)?.[1]);
    const hits = /api_near_cache_lookups_total\{result="hit"\} (\d+)/;
    const released = /api_near_cache_changes_total\{change="released"\} (\d+)/;
    const [hitsBefore, releasedBefore] = [await metric(hits), await metric(released)];
    const { id, key } = await readable();
    await warm(flowPath(id), key);
    expect(await metric(hits)).toBeGreaterThan(hitsBefore);
    expect(await metric(/api_near_cache_entries (\d+)/)).toBeGreaterThan(0);
    expect(await metric(/api_near_cache_changes_total\{change="warmed"\} (\d+)/)).toBeGreaterThan(
      0,
    );
    // The read that refills an emptied entry is one lookup, one miss.
    const misses = /api_near_cache_lookups_total\{result="miss"\} (\d+)/;
    await battery(id, 42);
    const refillMisses = await waitFor('the refill', async () => {
      const before = await metric(misses);
      return (await soeOf(id, key)) === 42 ? (await metric(misses)) - before : undefined;
    });
    expect(refillMisses).toBe(1);
    await battery(id, 43);
    await battery(id, 44);
    await waitFor('a release counted', async () =>
      (await metric(released)) > releasedBefore ? true : undefined,
    );
  });

  it('serves the bulk flow from memory and follows every change of a flow', async () => {
    const { id, key } = await readable();
    const bulkPath = `/getInstallationsCurrentEnergyFlow?installationIds=${id}`;
    /** The single endpoint's data bytes, and the bulk answer they make (beyond.md §4). */
    const expected = async () => {
      const single = (await get(flowPath(id), key)).body;
      const data = single.slice(single.indexOf('"data":') + 7, -1);
      return {
        body: `{"valid":true,"flows":[{"installationId":${id},"data":${data}}],"notFound":[]}`,
        etag: etagOf(`bulk-flow ${id}${etagOf(data)} notFound `),
      };
    };
    const check = (res: { body: string; headers: Record<string, unknown> }, want: object) => {
      expect({ body: res.body, etag: res.headers.etag }).toEqual(want);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    };
    // Served from memory twice: the second from the part the first kept with the entry.
    const before = await expected();
    const cold = await warm(bulkPath, key);
    check(cold, before);
    const { result: hot, commands } = await commandsOf(() => get(bulkPath, key));
    expect(commands).toEqual([]);
    check(hot, before);
    nowMs += 2_000;
    await battery(id, 63);
    await waitFor(
      'the new flow in the bulk answer',
      async () => ((await get(bulkPath, key)).body.includes('"batterySoe":63') ? true : undefined),
      1_000,
    );
    const after = await expected();
    expect(after.etag).not.toBe(before.etag);
    check(await warm(bulkPath, key), after);
    const again = await get(bulkPath, key);
    check(again, after);
    expect(again.headers['last-modified']).toBe(new Date(nowMs).toUTCString());
    expect(again.headers['last-modified']).not.toBe(hot.headers['last-modified']);
    nowMs = Date.now();
    // The answer kept for this text is another key's only if that key reads the same.
    expect((await get(bulkPath, stranger)).body).toBe(
      `{"valid":true,"flows":[],"notFound":[${id}]}`,
    );
    const { result: owner } = await commandsOf(() => get(bulkPath, key));
    check(owner, after);
    await api.seed.revokeKey(key);
    await refusedWithin(
      'bulk after revocation',
      Date.now(),
      async () => (await get(bulkPath, key)).statusCode,
      401,
    );
  });

  it('answers a revoked key 401 within 1 s with the cache warm', async () => {
    const { id, key } = await readable();
    await warm(flowPath(id), key);
    await api.seed.revokeKey(key);
    await refusedWithin(
      'revoked',
      Date.now(),
      async () => (await get(flowPath(id), key)).statusCode,
      401,
    );
    expect((await get(devicesPath(id), key)).statusCode).toBe(401);
  });

  it('answers 404 within 1 s when the grant goes, and for a deleted installation', async () => {
    const { id, key } = await readable();
    await warm(flowPath(id), key);
    await api.seed.removeGrant(key, id);
    await refusedWithin(
      'grant removed',
      Date.now(),
      async () => (await get(flowPath(id), key)).statusCode,
      404,
    );
    const other = await readable();
    await warm(devicesPath(other.id), other.key);
    await api.seed.deleteInstallation(other.id);
    await waitFor(
      '404',
      async () =>
        (await get(devicesPath(other.id), other.key)).statusCode === 404 ? true : undefined,
      1_000,
    );
  });

  it('drops what it holds when the read model is rebuilt underneath (a new epoch marker)', async () => {
    const { id, key } = await readable();
    await warm(flowPath(id), key);
    // What tools/rebuild.ts does: delete without announcing, then write a new marker.
    const keys = createKeys(api.prefix);
    const redis = testRedis();
    try {
      // One key per command: on a cluster they live in several slots.
      for (const k of [
        keys.acl(id),
        keys.installation(id),
        keys.flow(id),
        keys.devices(id),
        keys.keyStatus(hashApiKey(key)),
        keys.appStatus(id),
        keys.appView(id),
      ])
        await redis.unlink(k);
      // Unannounced, the deletion alone is not seen: the entry is still served.
      expect((await get(flowPath(id), key)).statusCode).toBe(200);
      await writeEpoch(redis, keys, Date.now(), { replace: true });
      await refusedWithin(
        'after a rebuild',
        Date.now(),
        async () => (await get(flowPath(id), key)).statusCode,
        401,
      );
    } finally {
      redis.disconnect();
    }
  });

  it('evaluates time per request: a warm flow loses a device that went offline', async () => {
    const { id, key } = await readable();
    const before = await warm(flowPath(id), key);
    expect(before.json().data.batterySoe).toBe(40);
    nowMs += (window + 1) * 1000;
    // The entry a flow read kept holds the flow alone: past validUntil it is read again, the
    // devices with it, then served from memory, recomputed from the cached devices.
    expect((await get(flowPath(id), key)).json().data).toBeNull();
    const after = await waitFor('the devices kept', async () => {
      const { result, commands } = await commandsOf(() => get(flowPath(id), key));
      return commands.length === 0 ? result : undefined;
    });
    expect(after.json().data).toBeNull();
    nowMs = Date.now();
  });

  it('answers 500 when a hit fails while it is answered in the same turn', async () => {
    const { id, key } = await readable();
    const redis = testRedis();
    try {
      // Unannounced: the entry filled next holds these bytes, unusable once the flow expires.
      const [field] = await redis.hkeys(api.seed.keys.devices(id));
      await redis.hset(api.seed.keys.devices(id), field as string, '{not json');
    } finally {
      redis.disconnect();
    }
    await warm(flowPath(id), key);
    nowMs += (window + 1) * 1000;
    // Past validUntil the entry is read again with its devices (see above), then hit.
    const res = await waitFor('a hit on the kept devices', async () => {
      const { result, commands } = await commandsOf(() => get(flowPath(id), key));
      return commands.length === 0 ? result : undefined;
    });
    expect([res.statusCode, res.body]).toEqual([500, '{"valid":false,"error":"INTERNAL_ERROR"}']);
    // Caught by the route's guard (route-context.ts), which logs the failure without arguments.
    expect(api.logLines.some((line) => line.includes('"msg":"read failed"'))).toBe(true);
    nowMs = Date.now();
  });

  it('answers a key past its expiry 401 with the cache warm', async () => {
    const id = nextId++;
    const key = newApiKey();
    await api.seed.installation(installation(id));
    await api.seed.liveKey(key, {
      app: id,
      installations: [installation(id)],
      expiresAtMs: nowMs + 60_000,
    });
    await warm(flowPath(id), key);
    nowMs += 61_000;
    expect((await get(flowPath(id), key)).statusCode).toBe(401);
    nowMs = Date.now();
  });

  it('drops every entry when the subscriber connection is lost', async () => {
    const { id, key } = await readable();
    await warm(flowPath(id), key);
    const redis = testRedis();
    try {
      expect(await killSubscribers(`changes:${api.seed.keys.internal('api')}`)).toBeGreaterThan(0);
      // A write nobody announces: only dropping the cache on the lost connection makes it seen.
      const flow = await redis.hget(api.seed.keys.flow(id), 'data');
      await redis.hset(
        api.seed.keys.flow(id),
        'data',
        (flow as string).replace('"batterySoe":40', '"batterySoe":41'),
      );
    } finally {
      redis.disconnect();
    }
    await waitFor(
      'the unannounced write',
      async () => ((await soeOf(id, key)) === 41 ? true : undefined),
      5_000,
    );
  });

  /**
   * The commands Redis ran for one request by `key`, installation ids masked. Pub/sub commands are
   * left out: the subscriber sends them off every request's path (warming, releasing), and on a
   * cluster a shard's lost subscriber connection from an earlier test can release entries late.
   */
  const workOf = async (url: string, key: string) => {
    const { result: res, commands } = await commandsOf(() => get(url, key));
    const masked = commands
      .filter(([name]) => !/^s?(un)?subscribe$/i.test(name as string))
      .map((args) => args.map((a) => a.replace(/\{i-?\d+\}/g, '{i#}')));
    return { status: res.statusCode, body: res.body, commands: masked };
  };

  it('runs the same commands for a cached inaccessible and a missing installation', async () => {
    const { id, key } = await readable();
    for (const path of [devicesPath, flowPath]) {
      await warm(path(id), key);
      await workOf(path(999_999), stranger);
      const inaccessible = await workOf(path(id), stranger);
      const missing = await workOf(path(999_999), stranger);
      expect(inaccessible.status).toBe(404);
      expect(missing.body).toBe(inaccessible.body);
      expect(inaccessible.commands.length).toBeGreaterThan(0);
      expect(missing.commands).toEqual(inaccessible.commands);
    }
  });
});
