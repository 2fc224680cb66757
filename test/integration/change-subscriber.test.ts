import { afterAll, describe, expect, it } from 'vitest';
import { createChangeSubscriber } from '../../api/change-feed/change-subscriber.js';
import { changeMessage } from '../../src/read-model/change-feed.js';
import { changeChannel, createKeys } from '../../src/read-model/keys.js';
import { connectRedis } from '../../src/read-model/redis-connection.js';
import { freePort } from '../support/free-port.js';
import { shardSubscribers } from '../support/shard-subscribers.js';
import { testRedis, uniqueId, waitFor } from '../support/stack.js';

// The API's change subscriber (api/change-feed/change-subscriber.ts) against the real Redis (or
// Cluster): a hold made before its connection is up waits for it, so the first announcement
// after the hold resolves is delivered. A stream opened in a process's first moments relied on
// that: its hold failed at once, the write it should have pushed went unannounced to it, and it
// caught up only by the re-read a second later (issue 42: unlinked to the write's trace).
describe('change subscriber', () => {
  const keys = createKeys(`${uniqueId('change-sub')}:`);
  const redis = testRedis();
  afterAll(() => redis.disconnect());

  it('subscribes a hold made while its connection is being made, and delivers what follows', async () => {
    const subscriber = createChangeSubscriber({ redis, keys, traceContext: true });
    const heard: Array<[number, string | undefined]> = [];
    subscriber.on('change', (id, traceparent) => heard.push([id, traceparent]));
    try {
      // Nothing has connected the subscriber yet: this hold is its first use.
      expect(subscriber.confirmed(7)).toBe(false);
      expect(await subscriber.hold(7)).toBe(true);
      const traceparent = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`;
      await redis.spublish(changeChannel(keys, 7), changeMessage('devices', traceparent));
      await waitFor('the announcement', async () => heard.length > 0 || undefined);
      expect(heard).toEqual([[7, traceparent]]);
    } finally {
      await subscriber.close();
    }
  });

  it('leaves no subscription behind for a hold released before its connection was made', async () => {
    const subscriber = createChangeSubscriber({ redis, keys });
    try {
      const released = subscriber.hold(9);
      subscriber.release(9);
      // Another hold resolving means the connection is made and the first hold settled.
      expect(await subscriber.hold(10)).toBe(true);
      expect(await released).toBe(false);
      expect(await shardSubscribers(redis, changeChannel(keys, 9))).toBe(0);
      expect(await shardSubscribers(redis, changeChannel(keys, 10))).toBe(1);
    } finally {
      await subscriber.close();
    }
  });

  it('gives up waiting when Redis cannot be reached, so a stream is not held up', async () => {
    const port = await freePort();
    const unreachable = connectRedis(
      { url: `redis://127.0.0.1:${port}`, keyPrefix: '', clusterNodes: [] },
      { lazyConnect: true, retryStrategy: () => 1_000 },
    );
    const subscriber = createChangeSubscriber({ redis: unreachable, keys });
    try {
      expect(await subscriber.hold(8)).toBe(false);
      expect(subscriber.confirmed(8)).toBe(false);
    } finally {
      await subscriber.close();
      unreachable.disconnect();
    }
  });
});
