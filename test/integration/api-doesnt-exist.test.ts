import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testRedis, waitFor } from '../support/stack.js';
import { testApi } from '../support-api/api-harness.js';
import { device, installation, newApiKey } from '../support-api/fixtures.js';

// semantics.md: a missing installation and an inaccessible one give the same 404 "and take the
// same time". A wall clock would be flaky; the same Redis work is the cause of the same time, so
// the test compares what Redis executed for each (MONITOR, script internals included).
describe('API 404 for a missing and an inaccessible installation', () => {
  // A fixed clock: `now` is a script argument and must not differ between the two requests.
  const nowMs = Date.now();
  // The uncached path; with the near-cache on, the same holds (api-near-cache.test.ts).
  const api = testApi({ clock: () => nowMs, env: { API_NEAR_CACHE_ENTRIES: '0' } });
  const base = api.config.api.basePath;
  const owner = newApiKey();
  const stranger = newApiKey();
  const inst = installation(201);
  let monitor: Redis;
  let seen: string[][] = [];
  let markers = 0;

  beforeAll(async () => {
    await api.ready();
    await api.seed.installation(inst);
    await api.seed.devices(
      inst.id,
      [
        {
          category: 'inverter',
          record: device('inverter', 1, inst.id, nowMs, { powerAc: 5 }),
        },
      ],
      nowMs,
      api.config.ingest.onlineWindowSeconds,
    );
    await api.seed.liveKey(owner, { app: 1, installations: [inst] });
    await api.seed.liveKey(stranger, { app: 2, installations: [] });
    monitor = await testRedis().monitor();
    // Other test files share this Redis: keep only the commands on this test's keys.
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args.some((a) => a.startsWith(api.prefix))) seen.push(args);
    });
  });
  afterAll(async () => {
    monitor.disconnect();
    await api.close();
  });

  /** The commands Redis ran for one request, installation ids masked, and the response. */
  const workOf = async (url: string) => {
    seen = [];
    const res = await api.app.inject({ url: `${base}${url}`, headers: { 'api-key': stranger } });
    // MONITOR reports in execution order: once this marker shows, the request's commands have.
    const marker = `${api.prefix}marker:${++markers}`;
    await api.redis.exists(marker);
    await waitFor('the marker in MONITOR', async () =>
      seen.some((args) => args.includes(marker)) ? true : undefined,
    );
    const commands = seen
      .filter((args) => !args.includes(marker))
      .map((args) => args.map((a) => a.replace(/\{i-?\d+\}/g, '{i#}')));
    return { status: res.statusCode, body: res.body, commands };
  };

  it('runs the same commands on the same keys and answers the same bytes', async () => {
    for (const path of ['/getInstallationDevices', '/getInstallationCurrentEnergyFlow']) {
      // Warm up: the first use of a script on a connection loads it.
      await workOf(`${path}?installationId=${inst.id}`);
      const inaccessible = await workOf(`${path}?installationId=${inst.id}`);
      const missing = await workOf(`${path}?installationId=999999`);
      expect(inaccessible.status, path).toBe(404);
      expect(inaccessible.body).toBe('{"valid":false,"error":"DOESNT_EXIST"}');
      expect(missing.body).toBe(inaccessible.body);
      // The script, inside it the acl lookup and the existence check, then the key view that
      // tells 404 from 401.
      const names = inaccessible.commands.map((c) => c[0]?.toLowerCase());
      expect(names, path).toEqual(['evalsha', 'hget', 'exists', 'hmget']);
      expect(missing.commands, path).toEqual(inaccessible.commands);
    }
  });

  it('would see a difference: the owner gets the devices, in the script alone', async () => {
    seen = [];
    const res = await api.app.inject({
      url: `${base}/getInstallationDevices?installationId=${inst.id}`,
      headers: { 'api-key': owner },
    });
    expect(res.statusCode).toBe(200);
    const marker = `${api.prefix}marker:${++markers}`;
    await api.redis.exists(marker);
    await waitFor('the marker in MONITOR', async () =>
      seen.some((args) => args.includes(marker)) ? true : undefined,
    );
    // One command: the acl entry proves the key live, so the key view is not read.
    const names = seen.filter((args) => !args.includes(marker)).map((c) => c[0]?.toLowerCase());
    expect(names).toEqual(['evalsha', 'hget', 'exists', 'hgetall']);
  });
});
