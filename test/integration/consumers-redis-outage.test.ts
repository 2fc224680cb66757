import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/stack.js';
import { type ThrowawayRedis, throwawayRedis } from '../support/throwaway-redis.js';
import {
  devicesOf,
  type Harness,
  installation,
  iso,
  startHarness,
} from './support/consumer-harness.js';

// Redis stopped mid-stream: the consumers retry without committing, and once Redis is back
// every event produced during the outage lands. Uses a throwaway redis-server of its own.

let server: ThrowawayRedis;
let redis: Redis;
let h: Harness;

beforeAll(async () => {
  server = await throwawayRedis();
  await server.start();
  redis = new Redis({ port: server.port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  h = await startHarness('outage', { redis, redisUrl: server.url });
});

afterAll(async () => {
  await h?.stop();
  redis?.disconnect();
  await server?.stop();
});

const battery = (inst: number, deviceId: number, atMs: number, powerDc: number) => ({
  type: 'device.state',
  installationId: inst,
  category: 'battery',
  deviceId,
  observedAt: iso(atMs),
  state: { powerDc },
});

async function retries(): Promise<number> {
  const m = await h.app.metrics.getSingleMetric('ingest_batch_retries_total')?.get();
  return (m?.values ?? []).reduce((a, v) => a + v.value, 0);
}

describe('Redis outage', () => {
  it('loses nothing produced while Redis was down', async () => {
    const now = Date.now();
    const t = h.config.topics;
    await h.send(t.telemetry, '1', battery(1, 11, now - 5_000, 1));
    await waitFor('before the outage', async () =>
      (await devicesOf(h, 1))['battery:11'] ? true : undefined,
    );

    await server.stop();
    const insts = [2, 3, 4, 5, 6, 7];
    for (const inst of insts)
      await h.send(t.telemetry, String(inst), battery(inst, inst * 10, now - 4_000, inst));
    await h.send(t.installations, '2', {
      type: 'installation.upserted',
      occurredAt: iso(now),
      installation: installation(2, 'during outage'),
      companyId: null,
    });
    await waitFor(
      'consumers retrying',
      async () => ((await retries()) >= 2 ? true : undefined),
      20_000,
    );

    await server.start();
    for (const inst of insts) {
      const devices = await waitFor(
        `installation ${inst} after the outage`,
        async () => {
          const d = await devicesOf(h, inst);
          return d[`battery:${inst * 10}`] ? d : undefined;
        },
        30_000,
      );
      expect(devices[`battery:${inst * 10}`]).toMatchObject({
        powerDc: inst,
        installationId: inst,
      });
    }
    const json = await waitFor(
      'installation after the outage',
      async () => (await redis.get(h.keys.installation(2))) ?? undefined,
    );
    expect(JSON.parse(json).name).toBe('during outage');
  });
});
