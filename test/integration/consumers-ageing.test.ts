import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHealthServer } from '../../consumers/health-server.js';
import { createFlowStore, flowScheduleKey } from '../../src/read-model/flow-store.js';
import { createKeys } from '../../src/read-model/keys.js';
import { testLogger, waitFor } from '../support/stack.js';
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
      observedAt: iso(Date.now()),
      state: { powerDc: 250, soe: 80 },
    });
    const online = await waitFor('online flow', async () => {
      const f = await flowOf(h, inst);
      return f?.data ? f : undefined;
    });
    expect(online.data).toMatchObject({ batteryPower: 250, batterySoe: 80 });
    expect(online.validUntil).toBeGreaterThan(0);
    expect(await h.redis.zscore(h.keys.internal('flow-due'), String(inst))).toBe(
      String(online.validUntil),
    );

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
    expect(await h.redis.zscore(h.keys.internal('flow-due'), String(inst))).toBeNull();
    const refreshes = await h.app.metrics.getSingleMetric('ingest_flow_refreshes_total')?.get();
    expect(refreshes?.values[0]?.value).toBeGreaterThanOrEqual(1);
  });
});

describe('flow ageing sweep', () => {
  it('postpones an installation it cannot recompute and refreshes the ones behind it', async () => {
    const bad = 434343;
    const good = 434344;
    // First by score: a stored record that is not JSON, flow due since long ago.
    await h.redis.hset(h.keys.devices(bad), 'battery:1', '{not json');
    await h.redis.hset(h.keys.flow(bad), { data: 'null', validUntil: '1' });
    await h.redis.zadd(flowScheduleKey(h.keys), 1, String(bad));
    await h.send(h.config.topics.telemetry, String(good), {
      type: 'device.state',
      installationId: good,
      category: 'battery',
      deviceId: 2,
      observedAt: iso(Date.now()),
      state: { powerDc: 100 },
    });
    await waitFor('online flow', async () => ((await flowOf(h, good))?.data ? true : undefined));
    await waitFor(
      'the good flow aged out behind the bad one',
      async () => ((await flowOf(h, good))?.data === null ? true : undefined),
      10_000,
    );
    const failures = await h.app.metrics
      .getSingleMetric('ingest_flow_refresh_failures_total')
      ?.get();
    expect(failures?.values[0]?.value).toBeGreaterThanOrEqual(1);
    const score = Number(await h.redis.zscore(flowScheduleKey(h.keys), String(bad)));
    expect(score).toBeGreaterThan(Date.now() - 5_000);
  });

  it('lets concurrent sweepers claim disjoint installations', async () => {
    // A prefix of its own: the app's sweeper must not take part.
    const keys = createKeys(`${h.config.redis.keyPrefix}claims:`);
    const schedule = flowScheduleKey(keys);
    const ids = Array.from({ length: 40 }, (_, i) => 500_000 + i);
    await h.redis.zadd(schedule, ...ids.flatMap((id) => [1, String(id)]));
    const conns = [h.redis.duplicate(), h.redis.duplicate()];
    const [a, b] = conns.map((conn) => createFlowStore({ conn, keys, onlineWindowSeconds: 2 }));
    const now = Date.now();
    const claims = await Promise.all([
      a?.claimDue(now, now + 60_000, 25) ?? [],
      b?.claimDue(now, now + 60_000, 25) ?? [],
    ]);
    for (const conn of conns) conn.disconnect();
    const claimed = claims.flat().filter((id) => ids.includes(id));
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed.length).toBe(ids.length);
    expect(await h.redis.zscore(schedule, String(ids[0]))).toBe(String(now + 60_000));
    await h.redis.zrem(schedule, ...ids.map(String));
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
