import { afterAll, expect, it } from 'vitest';
import { groupIdOf, TOPIC_ROLES } from '../../src/consumer-groups.js';
import { formatDateTime } from '../../src/domain/date-time.js';
import { decodeIndexEntry } from '../../src/read-model/device-index-entry.js';
import { decodeKeyExpiry } from '../../src/read-model/key-status-codec.js';
import { type RedisClient, scanKeys } from '../../src/read-model/redis-connection.js';
import { rebuildReadModel } from '../../tools/rebuild/read-model-rebuild.js';
import { testKafkaClient, testLogger, waitFor } from '../support/stack.js';
import { type Harness, installation, iso, sha, startHarness } from './support/consumer-harness.js';

// RedisClient is disposable: the documented rebuild (tools/rebuild.ts) empties the key prefix and
// moves the groups to the start; the consumers then replay the topics into the empty model,
// which must equal the live one key by key. Counters that only order writes (revisions, flow
// versions, access generations and view versions, the epoch marker) count attempts, not facts:
// left out, and of a signed access generation only its sign is compared.

const now = Date.now();
let live: Harness | undefined;
let rebuilt: Harness | undefined;
afterAll(async () => {
  await rebuilt?.stop();
  await live?.stop().catch(() => undefined);
});

const COUNTERS = /(:x:epoch|:x:viewver|:gen)$/;
// Hashes whose values are access generations, signed: only the sign (allowed or not) is a fact.
const SIGNED = /(:acl|:x:viewgen)$/;
const COUNTER_FIELDS = new Set(['#rev', 'v']);

/** Every key under the prefix with its value, counters left out, prefix stripped. */
async function snapshot(redis: RedisClient, prefix: string): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  for await (const found of scanKeys(redis, `${prefix}*`)) {
    for (const key of found) {
      if (COUNTERS.test(key)) continue;
      const type = await redis.type(key);
      let value: unknown;
      if (type === 'string') value = await redis.get(key);
      else if (type === 'set') value = (await redis.smembers(key)).sort();
      else if (type === 'hash') {
        const hash = await redis.hgetall(key);
        value = Object.fromEntries(
          Object.entries(hash)
            .filter(([f]) => !COUNTER_FIELDS.has(f))
            .sort(([a], [b]) => a.localeCompare(b)),
        );
      } else if (type === 'zset') value = await redis.zrange(key, '0', '-1', 'WITHSCORES');
      else value = type;
      if (SIGNED.test(key))
        value = Object.fromEntries(
          Object.entries(value as Record<string, string>).map(([f, v]) => [f, Number(v) > 0]),
        );
      // Which installation the last claim took a device from depends on the order partitions
      // were replayed in: bookkeeping for resending a release, not a fact.
      if (key.endsWith(':own')) value = { ...decodeIndexEntry(value as string), prev: undefined };
      out[key.slice(prefix.length)] = value;
    }
  }
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

const state = (inst: number, deviceId: number, atMs: number, s: object) => ({
  type: 'device.state',
  installationId: inst,
  category: 'battery',
  deviceId,
  observedAt: iso(atMs),
  state: s,
});

it('rebuilds from the topics a model equal to the live one, key by key', async () => {
  const h = await startHarness('rebuild');
  live = h;
  const t = h.config.topics;
  for (const id of [1, 2, 3])
    await h.send(t.installations, String(id), {
      type: 'installation.upserted',
      occurredAt: iso(now - 60_000),
      installation: installation(id, `site ${id}`),
      companyId: null,
    });
  await h.send(t.installations, '3', {
    type: 'installation.deleted',
    occurredAt: iso(now - 50_000),
    installationId: 3,
  });
  const fact = (key: string, event: object) =>
    h.send(t.access, key, { occurredAt: iso(now - 40_000), ...event });
  await fact('app:17', {
    type: 'application.upserted',
    applicationId: 17,
    owner: { type: 'user', id: 5 },
    enabled: true,
  });
  await fact('key:k1', {
    type: 'apiKey.created',
    keyId: 'k1',
    applicationId: 17,
    keyHash: sha('rebuild-key'),
    expiresAt: null,
  });
  // Expiring at the epoch: refused, and still refused after a rebuild (key-status-codec.ts).
  await fact('key:k-epoch', {
    type: 'apiKey.created',
    keyId: 'k-epoch',
    applicationId: 17,
    keyHash: sha('rebuild-epoch-key'),
    expiresAt: '1970-01-01T00:00:00Z',
  });
  for (const inst of [1, 2]) {
    await fact(`grant:17:${inst}`, {
      type: 'grant.added',
      applicationId: 17,
      installationId: inst,
    });
    await fact(`member:5:${inst}`, { type: 'membership.added', userId: 5, installationId: inst });
  }
  await h.send(t.telemetry, '1', state(1, 11, now - 30_000, { soe: 40, powerDc: 100 }));
  await h.send(t.telemetry, '1', state(1, 12, now - 30_000, { soe: 50, powerDc: 200 }));
  await h.send(t.telemetry, '2', state(2, 21, now - 20_000, { soe: 60, powerDc: 300 }));
  // Device 12 moves to 2, reporting every field it had reported in 1: the replay consumes the
  // partitions of 1 and 2 side by side, so 2 may claim it before 1's report is replayed, and a
  // field only that report carried would not be carried on (docs/projection.md, "What a move
  // cannot carry in every order"). Device 21 is removed.
  await h.send(t.telemetry, '2', state(2, 12, now - 10_000, { soe: 50, powerDc: 250 }));
  await h.send(t.telemetry, '2', {
    type: 'device.removed',
    installationId: 2,
    category: 'battery',
    deviceId: 21,
    occurredAt: iso(now - 5_000),
  });
  await h.settled();
  await waitFor(
    'device 12 released by installation 1',
    async () => (await h.redis.hexists(h.keys.devices(1), 'battery:12')) === 0 || undefined,
  );
  // When 2 claimed it before 1's report was applied, that report reaches 2 as an internal
  // device.seen, which settled() does not count: the live model is final once 2 dates the device
  // from 1's report. A snapshot before then reads a mix of keys written before and after.
  await waitFor('device 12 in installation 2 dated from its first report, in 1', async () => {
    const json = await h.redis.hget(h.keys.devices(2), 'battery:12');
    return json && JSON.parse(json).firstSeenDate === formatDateTime(now - 30_000)
      ? true
      : undefined;
  });
  const prefix = h.config.redis.keyPrefix;
  // The access worker derives after the batches: the model is final once no work is recorded.
  const before = await waitFor('the access entries derived', async () => {
    const model = await snapshot(h.redis, prefix);
    const pending = Object.keys(model).some((k) => /:x:(pending|sweep)$|:work$/.test(k));
    return !pending && model['{a17}:view'] ? model : undefined;
  });
  expect(Object.keys(before)).toContain('{i2}:devs');
  expect(Object.keys(before)).toContain(`{k${sha('rebuild-key')}}:status`);
  expect(before['{a17}:view']).toHaveLength(4);

  // The operator's procedure: stop the consumers, run the rebuild, start them again.
  await h.app.stop();
  // As a consumer before format 2 left it (`exp` 0, no `v`), which reads as "never": the
  // rebuild must not carry that over.
  const epochStatus = h.keys.keyStatus(sha('rebuild-epoch-key'));
  await h.redis.hdel(epochStatus, 'v');
  const expiryOf = async () => {
    const [exp, v] = await h.redis.hmget(epochStatus, 'exp', 'v');
    return decodeKeyExpiry(exp ?? null, v ?? null);
  };
  expect(await expiryOf()).toBeNull();
  const done = await rebuildReadModel({
    kafka: testKafkaClient(),
    redis: h.redis,
    keyPrefix: prefix,
    groups: TOPIC_ROLES.map((role) => ({ topic: t[role], groupId: groupIdOf(h.config, role) })),
    clock: Date.now,
    logger: testLogger,
  });
  expect(done.keysDeleted).toBeGreaterThan(0);
  rebuilt = await startHarness('rebuilt', {
    topics: t,
    redis: h.redis,
    env: { REDIS_KEY_PREFIX: prefix, CONSUMER_GROUP: h.config.consumer.groupId },
  });
  const after = await waitFor(
    'the rebuilt model',
    async () => {
      const now = await snapshot(h.redis, prefix);
      return JSON.stringify(now) === JSON.stringify(before) ? now : undefined;
    },
    30_000,
  ).catch(async () => snapshot(h.redis, prefix));
  expect(after).toEqual(before);
  expect(await expiryOf()).toBe(0);
});
