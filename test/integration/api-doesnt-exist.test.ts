import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { monitorRedis, type RedisMonitor } from '../support/redis-monitor.js';
import { testApi } from '../support-api/api-harness.js';
import { untilStatusesKept } from '../support-api/key-statuses.js';

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
  let monitor: RedisMonitor;

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
    // Other test files share this Redis: only the commands on this test's keys count.
    monitor = await monitorRedis(api.prefix);
  });
  afterAll(async () => {
    monitor.stop();
    await api.close();
  });

  /** The commands Redis ran for one request, installation ids masked, and the response. */
  const workOf = async (url: string, key = stranger) => {
    await monitor.take();
    const res = await api.app.inject({ url: `${base}${url}`, headers: { 'api-key': key } });
    const commands = (await monitor.take()).map((args) =>
      args.map((a) => a.replace(/\{i-?\d+\}/g, '{i#}')),
    );
    return { status: res.statusCode, body: res.body, commands };
  };

  it('runs the same commands on the same keys and answers the same bytes', async () => {
    for (const path of ['/getInstallationDevices', '/getInstallationCurrentEnergyFlow']) {
      // Warm up: the first use of a script on a connection loads it (on a cluster, the
      // connection to each node: the two installations may live on different ones), and the
      // key's statuses are read once, then kept while the API hears the access channel.
      await untilStatusesKept(
        async () => (await workOf(`${path}?installationId=${inst.id}`)).commands,
      );
      await workOf(`${path}?installationId=999999`);
      const inaccessible = await workOf(`${path}?installationId=${inst.id}`);
      const missing = await workOf(`${path}?installationId=999999`);
      expect(inaccessible.status, path).toBe(404);
      expect(inaccessible.body).toBe('{"valid":false,"error":"DOESNT_EXIST"}');
      expect(missing.body).toBe(inaccessible.body);
      // The key is judged before any data read (its statuses kept in memory), then the script,
      // inside it the acl lookup and the existence check: nothing else tells the two apart.
      const names = inaccessible.commands.map((c) => c[0]?.toLowerCase());
      expect(names, path).toEqual(['evalsha', 'hget', 'exists']);
      expect(missing.commands, path).toEqual(inaccessible.commands);
    }
  });

  it('would see a difference: the owner gets the devices, in the script alone', async () => {
    const url = `/getInstallationDevices?installationId=${inst.id}`;
    await untilStatusesKept(async () => (await workOf(url, owner)).commands);
    const { status, commands } = await workOf(url, owner);
    expect(status).toBe(200);
    // One command: the key's statuses are kept in memory, the script reads the devices.
    const names = commands.map((c) => c[0]?.toLowerCase());
    expect(names).toEqual(['evalsha', 'hget', 'exists', 'hgetall']);
  });
});
