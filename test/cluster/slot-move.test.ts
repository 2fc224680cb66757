import calculateSlot from 'cluster-key-slot';
import type { Cluster, Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys } from '../../src/read-model/keys.js';
import { isCluster } from '../../src/read-model/redis-connection.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { testRedis } from '../support/stack.js';
import { type TestApi, testApi } from '../support-api/api-harness.js';

// Resharding under the API (`npm run test:failover`: TEST_REDIS=cluster, files one at a time, as
// it moves a slot between masters). The API sends a read straight to the node its slot map names
// (slot-router.ts); while the slot is being migrated that node answers ASK, and once moved MOVED.
// Either way the read must still answer, from wherever the keys now are, with nothing cached.

const INSTALLATION = 920_001;
const admin = testRedis();
let api: TestApi | undefined;
let moveBack: (() => Promise<void>) | undefined;

afterAll(async () => {
  await moveBack?.();
  await api?.close();
  admin.disconnect();
});

const addressOf = (node: Redis) => `${node.options.host}:${node.options.port}`;
const idOf = async (node: Redis) => String(await node.call('cluster', 'myid'));

/**
 * Starts moving `slot` from one master to another, keys included (the documented manual
 * resharding: IMPORTING, MIGRATING, MIGRATE); `finish` hands the slot over on every master.
 */
async function beginMove(masters: Redis[], slot: number, source: Redis, target: Redis) {
  const [sourceId, targetId] = await Promise.all([idOf(source), idOf(target)]);
  await target.call('cluster', 'setslot', slot, 'importing', sourceId);
  await source.call('cluster', 'setslot', slot, 'migrating', targetId);
  for (;;) {
    const keys = (await source.call('cluster', 'getkeysinslot', slot, 100)) as string[];
    if (keys.length === 0) break;
    const { host = '', port = 0 } = target.options;
    await source.call('migrate', host, port, '', 0, 5_000, 'KEYS', ...keys);
  }
  return async function finish() {
    // The target first, so no node points at a master that does not know it owns the slot.
    for (const node of [target, ...masters.filter((n) => n !== target)])
      await node.call('cluster', 'setslot', slot, 'node', targetId);
  };
}

describe('A slot moved to another master under the API', () => {
  it('reads follow the slot: mid-migration (ASK) and once moved (MOVED)', async () => {
    if (!isCluster(admin)) throw new Error('run with TEST_REDIS=cluster (npm run test:failover)');
    api = testApi({ env: { API_NEAR_CACHE_ENTRIES: '0' } });
    await api.ready();
    const inst = installation(INSTALLATION);
    const key = newApiKey();
    const nowMs = Date.now();
    await api.seed.installation(inst);
    await api.seed.devices(
      inst.id,
      [{ category: 'battery', record: device('battery', 7, inst.id, nowMs, { soe: 61 }) }],
      nowMs,
      api.config.ingest.onlineWindowSeconds,
    );
    await api.seed.liveKey(key, { app: 1, installations: [inst] });
    const get = async (endpoint: string) => {
      const res = await api?.app.inject({
        url: `${api.config.api.basePath}/${endpoint}?installationId=${inst.id}`,
        headers: { 'api-key': key },
      });
      return { status: res?.statusCode, body: res?.body };
    };
    const endpoints = ['getInstallationCurrentEnergyFlow', 'getInstallationDevices'];
    const before = await Promise.all(endpoints.map(get));
    for (const read of before) expect(read.status).toBe(200);
    expect(JSON.parse(before[0]?.body ?? '').data.batterySoe).toBe(61);

    await admin.ping();
    const slot = calculateSlot(createKeys(api.prefix).acl(inst.id));
    const masters = (admin as Cluster).nodes('master');
    const owner = (admin as Cluster).slots[slot]?.[0];
    const source = masters.find((n) => addressOf(n) === owner);
    const target = masters.find((n) => n !== source);
    if (!source || !target) throw new Error(`slot ${slot}: no master known to move it from or to`);
    const finish = await beginMove(masters, slot, source, target);
    moveBack = async () => {
      await finish();
      await (await beginMove(masters, slot, target, source))();
    };
    // Every key is on the target now; the source, still the owner, answers ASK for them.
    expect(await source.call('cluster', 'countkeysinslot', slot)).toBe(0);
    expect(await Promise.all(endpoints.map(get))).toEqual(before);

    await finish();
    // The API's slot map still names the source, which now answers MOVED.
    expect(await Promise.all(endpoints.map(get))).toEqual(before);
    expect(await Promise.all(endpoints.map(get))).toEqual(before);
  });
});
