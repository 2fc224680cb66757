import { afterAll, expect, it } from 'vitest';
import { createSeeder } from '../../tools/seed/read-model-seed.js';
import { device, installation } from '../../tools/seed/records.js';
import { dropPrefix, testRedis, uniqueId } from '../support/stack.js';

// One batch that changes more devices of one installation than Lua's unpack takes (near 8,000
// values: 5,000 devices are 10,000 field/value pairs): the write script chunks its calls, so the
// batch is written whole instead of failing without end.

const redis = testRedis();
const prefix = `${uniqueId('large-inst')}:`;
afterAll(async () => {
  await dropPrefix(redis, prefix);
  redis.disconnect();
});

it('writes one batch of 5,000 devices of one installation whole', async () => {
  const seed = createSeeder(redis, prefix);
  const id = 77;
  const nowMs = Date.now();
  await seed.installation(installation(id));
  const devices = Array.from({ length: 5_000 }, (_, i) => ({
    category: 'battery' as const,
    record: device('battery', 10_000 + i, id, nowMs - 1_000, { soe: 50, powerDc: 1 }),
  }));
  await seed.devices(id, devices, nowMs, 300);
  expect(await redis.hlen(seed.keys.devices(id))).toBe(5_000);
  const flow = JSON.parse((await redis.hget(seed.keys.flow(id), 'data')) as string);
  expect(flow.batteryPower).toBe(5_000);
});
