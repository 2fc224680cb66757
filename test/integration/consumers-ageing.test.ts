import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHealthServer } from '../../consumers/health-server.js';
import { nextWholeSecond, testLogger, waitFor } from '../support/stack.js';
import { flowOf, type Harness, iso, startHarness } from './support/consumer-harness.js';

// Time alone takes a device offline: with a 2 s online window the stored flow must stop
// counting it without any further event.

let h: Harness;
const inst = 424242;

beforeAll(async () => {
  h = await startHarness('ageing', { env: { ONLINE_WINDOW_SECONDS: '2' } });
});
afterAll(async () => {
  await h?.stop();
});

describe('flow ageing', () => {
  it('recomputes the flow when the only counted device goes offline', async () => {
    await h.send(h.config.topics.telemetry, String(inst), {
      type: 'device.state',
      installationId: inst,
      category: 'battery',
      deviceId: 1,
      observedAt: iso(nextWholeSecond()),
      state: { powerDc: 250, soe: 80 },
    });
    const online = await waitFor('online flow', async () => {
      const f = await flowOf(h, inst);
      return f?.data ? f : undefined;
    });
    expect(online.data).toMatchObject({ batteryPower: 250, batterySoe: 80 });
    expect(online.validUntil).toBeGreaterThan(0);

    const offline = await waitFor(
      'flow aged out',
      async () => {
        const f = await flowOf(h, inst);
        return f && f.data === null ? f : undefined;
      },
      10_000,
    );
    expect(offline.validUntil).toBe(0);
    expect(Date.now()).toBeGreaterThan(online.validUntil);
    // Counted once the write is acknowledged, a moment after it is visible.
    await waitFor('the refresh counted', async () => {
      const refreshes = await h.app.metrics.getSingleMetric('ingest_flow_refreshes_total')?.get();
      return (refreshes?.values[0]?.value ?? 0) >= 1 || undefined;
    });
  });
});

describe('flow ageing by the partition owner', () => {
  it('never lets an installation it cannot read hold back the ageing of the others', async () => {
    const bad = 434343;
    const good = 434344;
    // A stored record that is not JSON: its events are dead-lettered, the others go on.
    await h.redis.hset(h.keys.devices(bad), 'battery:1', '{not json');
    await h.redis.hset(h.keys.flow(bad), { data: 'null', validUntil: '1' });
    for (const id of [bad, good])
      await h.send(h.config.topics.telemetry, String(id), {
        type: 'device.state',
        installationId: id,
        category: 'battery',
        deviceId: id === bad ? 1 : 2,
        observedAt: iso(nextWholeSecond()),
        state: { powerDc: 100 },
      });
    await waitFor('online flow', async () => ((await flowOf(h, good))?.data ? true : undefined));
    await waitFor(
      'the good flow aged out beside the bad one',
      async () => ((await flowOf(h, good))?.data === null ? true : undefined),
      10_000,
    );
    await waitFor('the unreadable installation reported', async () => {
      const corrupt = await h.app.metrics
        .getSingleMetric('ingest_corrupt_installations_total')
        ?.get();
      return (corrupt?.values[0]?.value ?? 0) >= 1 || undefined;
    });
    const dead = await waitFor('its event dead-lettered', async () => {
      const all = await h.deadLetters();
      return all.length > 0 ? all : undefined;
    });
    expect(dead[0]?.headers['x-reason']?.toString()).toBe('processing_error');
  });
});

describe('flow ageing beyond the memory bound', () => {
  it('ages every flow when the owner holds one installation per partition', async () => {
    // Each load evicts the state loaded before it: the sweep must still refresh them all and
    // keep the evicted ones due.
    const tight = await startHarness('ageing-tight', {
      env: { ONLINE_WINDOW_SECONDS: '3', CONSUMER_STATE_INSTALLATIONS_PER_PARTITION: '1' },
    });
    try {
      const ids = [464601, 464602, 464603, 464604, 464605, 464606, 464607, 464608];
      for (const id of ids)
        await tight.send(tight.config.topics.telemetry, String(id), {
          type: 'device.state',
          installationId: id,
          category: 'battery',
          deviceId: id,
          observedAt: iso(nextWholeSecond()),
          state: { powerDc: 100 },
        });
      await waitFor('every flow online', async () => {
        const flows = await Promise.all(ids.map((id) => flowOf(tight, id)));
        return flows.every((f) => f?.data) || undefined;
      });
      for (const id of ids)
        await waitFor(
          `flow of ${id} aged out`,
          async () => ((await flowOf(tight, id))?.data === null ? true : undefined),
          10_000,
        );
    } finally {
      await tight.stop();
    }
  });
});

describe('flow ageing after a restart', () => {
  it('recomputes the flows of installations the new owner has not met yet', async () => {
    const id = 454545;
    const env = { ONLINE_WINDOW_SECONDS: '2' };
    const first = await startHarness('ageing-restart', { env });
    try {
      await first.send(first.config.topics.telemetry, String(id), {
        type: 'device.state',
        installationId: id,
        category: 'battery',
        deviceId: 1,
        observedAt: iso(nextWholeSecond()),
        state: { powerDc: 250, soe: 80 },
      });
      await waitFor('online flow', async () =>
        (await flowOf(first, id))?.data ? true : undefined,
      );
      // The owner goes away with its memory; the next one gets no event for this installation.
      await first.app.stop();
      const next = await startHarness('ageing-restarted', {
        env: {
          ...env,
          REDIS_KEY_PREFIX: first.config.redis.keyPrefix,
          CONSUMER_GROUP: first.config.consumer.groupId,
        },
        topics: first.config.topics,
        redis: first.redis,
      });
      try {
        const aged = await waitFor(
          'flow aged out by the new owner',
          async () => {
            const f = await flowOf(next, id);
            return f && f.data === null ? f : undefined;
          },
          20_000,
        );
        expect(aged.validUntil).toBe(0);
      } finally {
        await next.stop();
      }
    } finally {
      await first.stop().catch(() => undefined);
    }
  });
});

describe('health server', () => {
  it('serves liveness, readiness and the metrics of the running app', async () => {
    const health = await startHealthServer({
      port: 0,
      host: '127.0.0.1',
      registry: h.app.metrics,
      isReady: () => h.app.isReady(),
      logger: testLogger,
    });
    try {
      const base = `http://127.0.0.1:${health.port}`;
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
      const ready = await fetch(`${base}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toEqual({ status: 'ready' });
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toContain('ingest_batch_duration_seconds_bucket');
      expect(metrics).toContain('ingest_consumer_lag{topic=');
      expect((await fetch(`${base}/nope`)).status).toBe(404);
    } finally {
      await health.close();
    }
  });
});
