import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHealthServer } from '../../consumers/health-server.js';
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
