import type { Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { isCluster } from '../../src/read-model/redis-connection.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { testRedis, waitFor } from '../support/stack.js';
import { type TestApi, testApi } from '../support-api/api-harness.js';

// API_REDIS_READ_REPLICAS on Redis Cluster (`npm run test:failover`: TEST_REDIS=cluster, files
// one at a time): the reads nothing keeps go to the replicas of their slot, none to a master;
// a key revoked on the master is refused as without replicas.

const admin = testRedis();
let api: TestApi | undefined;
afterAll(async () => {
  await api?.close();
  admin.disconnect();
});

const scriptCalls = async (nodes: readonly Redis[]): Promise<number> => {
  let total = 0;
  for (const node of nodes) {
    const stats = await node.info('commandstats');
    for (const command of ['evalsha', 'eval'])
      total += Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  }
  return total;
};

describe('Reads from the replicas of a cluster', () => {
  it('go to replicas only, and a revoked key is refused', async () => {
    if (!isCluster(admin)) throw new Error('run with TEST_REDIS=cluster (npm run test:failover)');
    const cluster = admin as Cluster;
    api = testApi({
      env: { API_REDIS_READ_REPLICAS: 'true', API_NEAR_CACHE_ENTRIES: '0' },
    });
    await api.ready();
    const key = newApiKey();
    const ids = [930_001, 930_002, 930_003, 930_004, 930_005, 930_006];
    const nowMs = Date.now();
    for (const id of ids) {
      await api.seed.installation(installation(id));
      await api.seed.devices(
        id,
        [
          {
            category: 'inverter',
            record: device('inverter', 1, id, nowMs - 1_000, { powerAc: 3 }),
          },
        ],
        nowMs,
        api.config.ingest.onlineWindowSeconds,
      );
    }
    await api.seed.liveKey(key, { app: 93, installations: ids.map((id) => installation(id)) });
    // Every master's writes on its replica before reading there.
    for (const master of cluster.nodes('master')) await master.call('WAIT', '1', '5000');
    const flow = (id: number, apiKey = key) =>
      api?.app.inject({
        method: 'GET',
        url: `${api.config.api.basePath}/getInstallationCurrentEnergyFlow?installationId=${id}`,
        headers: { 'api-key': apiKey },
      });

    // A cluster just started may not have every replica attached, nor the API's slot map know
    // them (refreshed every 2 s): a slot without a replica is read on its master. Wait until
    // every master has one and a round of reads lands on replicas only.
    const masters = cluster.nodes('master');
    await waitFor('a replica per master', async () =>
      cluster.nodes('slave').length >= masters.length ? true : undefined,
    );
    const replicas = cluster.nodes('slave');
    const round = async () => {
      for (const id of ids) expect((await flow(id))?.statusCode).toBe(200);
    };
    await waitFor('every slot read on a replica', async () => {
      const before = await scriptCalls(masters);
      await round();
      return (await scriptCalls(masters)) === before ? true : undefined;
    });
    const [mastersBefore, replicasBefore] = [
      await scriptCalls(masters),
      await scriptCalls(replicas),
    ];
    for (let i = 0; i < 3; i++) await round();
    expect((await scriptCalls(replicas)) - replicasBefore).toBeGreaterThanOrEqual(ids.length * 3);
    expect((await scriptCalls(masters)) - mastersBefore).toBe(0);

    await api.seed.revokeKey(key);
    await waitFor('the key refused', async () =>
      (await flow(ids[0] as number))?.statusCode === 401 ? true : undefined,
    );
  });
});
