import { afterAll, beforeAll, expect, it } from 'vitest';
import { hashApiKey } from '../../src/domain/access-rule.js';
import { createAccessFactStore } from '../../src/read-model/access-fact-store.js';
import { createAccessViewStore } from '../../src/read-model/access-store.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import { dropPrefix, testRedis, uniqueId } from '../support/stack.js';
import { installation, newApiKey } from '../support-api/fixtures.js';
import { createSeeder } from '../support-api/seed.js';

// A key re-created with a new hash must stop the old hash working even when the recompute that
// follows fails and the batch is retried: the retry re-applies the fact, which then finds the new
// hash already stored, so the old hash can only come from what the first attempt recorded.

let redis: RedisClient;
const prefix = `${uniqueId('rotation')}:`;

beforeAll(() => {
  redis = testRedis();
});
afterAll(async () => {
  await dropPrefix(redis, prefix);
  redis.disconnect();
});

it('removes the old hash view and acl entry after a retried rotation', async () => {
  const seed = createSeeder(redis, prefix);
  const facts = createAccessFactStore({ conn: redis, keys: seed.keys });
  const views = createAccessViewStore({ conn: redis, keys: seed.keys });
  const record = installation(4242);
  await seed.installation(record);
  const oldKey = newApiKey();
  const oldHash = await seed.liveKey(oldKey, { app: 77, installations: [record] });
  expect(await redis.hget(seed.keys.acl(4242), oldHash)).not.toBeNull();

  const newHash = hashApiKey(newApiKey());
  const rotation = {
    type: 'apiKey.created' as const,
    occurredAt: new Date().toISOString(),
    keyId: `key-${oldHash.slice(0, 16)}`,
    applicationId: 77,
    keyHash: newHash,
    expiresAt: null,
  };
  // First attempt: the fact is stored, then the recompute fails (never runs). The retry applies
  // the same fact again before recomputing.
  await facts.apply(rotation);
  await facts.apply(rotation);
  await views.recomputeApplication(77);

  expect(await redis.exists(seed.keys.keyView(oldHash))).toBe(0);
  expect(await redis.hget(seed.keys.acl(4242), oldHash)).toBeNull();
  expect(await redis.hget(seed.keys.acl(4242), newHash)).not.toBeNull();
  expect(await redis.hget(seed.keys.keyView(newHash), 'app')).toBe('77');
});
