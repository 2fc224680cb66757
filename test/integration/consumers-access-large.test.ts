import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Producer } from '../../consumers/kafka/client.js';
import { accessFactKeys } from '../../src/read-model/access-facts.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import { recordFigures } from '../support/figures.js';
import { dropPrefix, testKafkaClient, testRedis, waitFor } from '../support/stack.js';
import { type Harness, installation, iso, sha, startHarness } from './support/consumer-harness.js';

// Issue 37 on real Kafka and Redis: an application of 20,000 grants built from the topic, with
// another application's revocation and a small application's grant produced right behind it;
// then an owner change of the large one, cut by a stop of its consumer and finished by the
// next one.

const GRANTS = 20_000;
const BIG = 37_001;
const SMALL = 37_002;
const OTHER = 37_003;
const COMPANY = 3_700;
const FIRST = 1_000_000;
const now = Date.now();

let redis: RedisClient;
let h: Harness;
let producer: Producer;

const fact = (key: string, event: object) => ({
  key,
  value: JSON.stringify({ occurredAt: iso(now), ...event }),
});
const appFact = (applicationId: number, companyId: number) =>
  fact(`app:${applicationId}`, {
    type: 'application.upserted',
    applicationId,
    owner: { type: 'company', id: companyId },
    enabled: true,
  });
const keyFact = (keyId: string, applicationId: number) =>
  fact(`key:${keyId}`, {
    type: 'apiKey.created',
    keyId,
    applicationId,
    keyHash: sha(keyId),
    expiresAt: null,
  });
const grantFact = (applicationId: number, installationId: number) =>
  fact(`grant:${applicationId}:${installationId}`, {
    type: 'grant.added',
    applicationId,
    installationId,
  });
const upsert = (id: number, companyId: number) => ({
  key: String(id),
  value: JSON.stringify({
    type: 'installation.upserted',
    occurredAt: iso(now),
    installation: installation(id, `site ${id}`),
    companyId,
  }),
});

async function sendAll(topic: string, messages: Array<{ key: string; value: string }>) {
  for (let i = 0; i < messages.length; i += 2_000)
    await producer.send(topic, messages.slice(i, i + 2_000));
}

const bigIds = Array.from({ length: GRANTS }, (_, i) => FIRST + i);
const allowed = async (app: number, id: number) =>
  Number((await h.redis.hget(h.keys.acl(id), String(app))) ?? '0') > 0;
const viewSize = (app: number) => h.redis.zcard(h.keys.appView(app));

beforeAll(async () => {
  redis = testRedis();
  h = await startHarness('access-large', { redis });
  producer = testKafkaClient().createProducer();
  await producer.connect();
}, 60_000);
afterAll(async () => {
  await producer?.disconnect();
  await h?.stop();
  if (h) await dropPrefix(redis, h.config.redis.keyPrefix);
  redis?.disconnect();
});

describe('an application of 20,000 grants', () => {
  it('is built from the topic while a revocation and a small grant behind it apply at once', async () => {
    const { access, installations } = h.config.topics;
    // The other and the small application first, live and settled.
    await sendAll(installations, [upsert(SMALL, 7), ...bigIds.map((id) => upsert(id, COMPANY))]);
    await sendAll(access, [
      appFact(OTHER, 8),
      keyFact('other-key', OTHER),
      appFact(SMALL, 7),
      keyFact('small-key', SMALL),
      appFact(BIG, COMPANY),
      keyFact('big-key', BIG),
    ]);
    await waitFor('the keys', async () =>
      (await h.redis.hget(h.keys.keyStatus(sha('small-key')), 'app')) ? true : undefined,
    );
    // 20,000 grants, then right behind them a revocation and a small application's grant.
    await sendAll(
      access,
      bigIds.map((id) => grantFact(BIG, id)),
    );
    const producedAt = performance.now();
    await sendAll(access, [
      fact('key:other-key', { type: 'apiKey.revoked', keyId: 'other-key' }),
      grantFact(SMALL, SMALL),
    ]);
    const revoked = await waitFor(
      'the revocation',
      async () =>
        (await h.redis.hget(h.keys.keyStatus(sha('other-key')), 'revoked')) === '1'
          ? performance.now() - producedAt
          : undefined,
      30_000,
    );
    const smallGranted = await waitFor(
      "the small application's grant",
      async () => ((await allowed(SMALL, SMALL)) ? performance.now() - producedAt : undefined),
      30_000,
    );
    const builtWhenRevoked = await viewSize(BIG);
    recordFigures(
      'consumers-access-large',
      `behind ${GRANTS} grants: revoked ${revoked.toFixed(0)} ms, small grant ${smallGranted.toFixed(0)} ms, large view ${builtWhenRevoked} entries then`,
    );
    await waitFor(
      'the whole large application',
      async () => ((await viewSize(BIG)) === GRANTS ? true : undefined),
      120_000,
    );
    // Neither waited for the large application's 20,000 entries: both applied while most of
    // the large one was still to derive. Their latency (the documented 1 s) is a figure, recorded
    // above, not a clock assertion: on a busy machine CI once saw 1,036 ms with the order intact.
    expect(builtWhenRevoked).toBeLessThan(GRANTS);
    expect(await allowed(BIG, FIRST + GRANTS - 1)).toBe(true);
    // Ascending ids, each member the installation's JSON.
    const first = await h.redis.zrange(h.keys.appView(BIG), '0', '0', 'WITHSCORES');
    expect(first[1]).toBe(String(FIRST));
    expect(JSON.parse(first[0] as string).id).toBe(FIRST);
  }, 180_000);

  it('finishes an owner change that a stopped consumer left half done', async () => {
    const { access } = h.config.topics;
    const k = accessFactKeys(h.keys);
    // Another company: none of the 20,000 installations is its own, all access ends.
    await sendAll(access, [appFact(BIG, COMPANY + 1)]);
    await waitFor(
      'the sweep under way',
      async () => {
        const size = await viewSize(BIG);
        return size < GRANTS && size > 0 ? true : undefined;
      },
      60_000,
    );
    const { config } = h;
    await h.stop();
    const left = await viewSize(BIG);
    expect(left).toBeGreaterThan(0);
    // The same group, prefix and topics: the next owner of the partition resumes the sweep.
    h = await startHarness('access-large-next', {
      redis,
      topics: config.topics,
      env: { REDIS_KEY_PREFIX: config.redis.keyPrefix, CONSUMER_GROUP: config.consumer.groupId },
    });
    await waitFor(
      'the sweep finished',
      async () =>
        (await viewSize(BIG)) === 0 && (await h.redis.exists(k.appSweep(BIG))) === 0
          ? true
          : undefined,
      120_000,
    );
    expect(await allowed(BIG, FIRST)).toBe(false);
    expect(await allowed(BIG, FIRST + GRANTS - 1)).toBe(false);
    // The small application was never touched.
    expect(await allowed(SMALL, SMALL)).toBe(true);
  }, 240_000);
});
