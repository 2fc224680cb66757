import { execFileSync } from 'node:child_process';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { numberArg } from '../lib/options.js';
import { ROOT } from '../lib/processes.js';
import { cannon, loadRunner, medianOf, pick, type Run, rpsList } from '../lib/side-by-side.js';
import { BASE_PATH as BASE } from '../lib/stack.js';
import { loadAverage, seedFlowModel, standalone, type Target } from '../lib/standalone.js';

// Issue 14's read target: the three reads through a Redis Cluster against the same reads through
// the single Redis, side by side in one run (S C alternating), each API as configured by default
// (near-cache on) and uncached (API_NEAR_CACHE_ENTRIES=0: every read goes to Redis, the case the
// cluster can cost most). The same model is seeded on both: 1,000 installations of 3 devices,
// 4 keys granted all of them; getInstallations keys of their own with 200 installations each.
// Then flow and devices uncached on the cluster, from masters only against from replicas
// (API_REDIS_READ_REPLICAS=true, issue 39).
// The cluster is the stack script's (3 masters, 3 replicas), started when it is not running:
//   npx tsx bench/cases/cluster-reads.ts [--seconds 5] [--alternations 3] [--connections 64]
//   (REDIS_CLUSTER_PORT_BASE picks the cluster's ports, 17001 by default)

const LOAD = loadRunner({ connections: 64 });
const INSTALLATIONS = numberArg('installations', 1_000);
const LIST_SIZE = 200;
const base = Number(process.env.REDIS_CLUSTER_PORT_BASE ?? '17001');
const clusterNodes = [0, 1, 2].map((i) => `127.0.0.1:${base + i}`).join(',');

execFileSync('bash', ['infra/stack.sh', 'start', 'redis-cluster'], { cwd: ROOT, stdio: 'inherit' });
const single = standalone('cluster-reads-single');
const cluster = standalone('cluster-reads-cluster', { clusterNodes });
const insts = Array.from({ length: INSTALLATIONS }, (_, i) => installation(7000 + i));
const keys = Array.from({ length: 4 }, () => newApiKey());
const listKeys = Array.from({ length: 4 }, () => newApiKey());
const endpoints = [
  'getInstallationCurrentEnergyFlow',
  'getInstallationDevices',
  'getInstallations',
] as const;
type Endpoint = (typeof endpoints)[number];
const keysOf = (e: Endpoint) => (e === 'getInstallations' ? listKeys : keys);
const at = (e: Endpoint, id: number) =>
  e === 'getInstallations' ? `${BASE}/${e}` : `${BASE}/${e}?installationId=${id}`;
const load = (server: Target, e: Endpoint): Promise<Run> =>
  LOAD.run(server, () => ({
    path: at(e, pick(insts).id),
    headers: { 'api-key': pick(keysOf(e)) },
  }));

try {
  for (const side of [single, cluster]) {
    await seedFlowModel(side.seed, insts, keys, {
      inverter: { powerAc: 1200 },
      battery: { soe: 55, powerDc: 300 },
      energyMeter: { powerAc: -400 },
    });
    for (const [a, key] of listKeys.entries())
      await side.seed.liveKey(key, {
        app: 100 + a,
        installations: insts.slice(a * LIST_SIZE, (a + 1) * LIST_SIZE),
      });
  }
  const uncached = { API_NEAR_CACHE_ENTRIES: '0' };
  const [s, c, sOff, cOff, cReplicas] = await Promise.all([
    single.api(18395),
    cluster.api(18396),
    single.api(18397, uncached),
    cluster.api(18398, uncached),
    // Issue 39: the uncached reads sent to the replicas of their slot instead of the masters.
    cluster.api(18399, { ...uncached, API_REDIS_READ_REPLICAS: 'true' }),
  ]);
  // Warm up: JIT, script caches, near-caches (every pair twice, as near-cache-reads.ts does).
  for (const e of endpoints)
    for (const server of [s, c, sOff, cOff, cReplicas]) {
      let n = 0;
      const list = keysOf(e);
      await cannon(
        server.origin,
        () => {
          const i = n++;
          const inst = insts[Math.floor(i / list.length) % INSTALLATIONS] as { id: number };
          return { path: at(e, inst.id), headers: { 'api-key': list[i % list.length] as string } };
        },
        { connections: 8, amount: 2 * list.length * INSTALLATIONS },
      );
    }
  console.log(
    `load ${loadAverage()}; ${INSTALLATIONS} installations, ${LOAD.connections} connections, ${LOAD.seconds} s x ${LOAD.alternations}, single and cluster alternating`,
  );
  const m = medianOf;
  for (const e of endpoints) {
    for (const [label, one, many] of [
      ['near-cache on', s, c],
      ['uncached', sOff, cOff],
    ] as const) {
      const runs = await LOAD.alternate({
        single: () => load(one, e),
        cluster: () => load(many, e),
      });
      const sr = m(runs.single, (r) => r.rps);
      const cr = m(runs.cluster, (r) => r.rps);
      console.log(
        `${e} 200, ${label}: cluster ${cr.toFixed(0)} req/s = ${(cr / sr).toFixed(2)}x single ${sr.toFixed(0)} req/s (target >= 0.9x); API CPU/request ${m(runs.cluster, (r) => r.cpuUs).toFixed(0)} vs ${m(runs.single, (r) => r.cpuUs).toFixed(0)} µs; p99 ${m(runs.cluster, (r) => r.p99)} / ${m(runs.single, (r) => r.p99)} ms  [cluster ${rpsList(runs.cluster)} | single ${rpsList(runs.single)}]`,
      );
    }
  }
  for (const e of endpoints.filter((x) => x !== 'getInstallations')) {
    const runs = await LOAD.alternate({
      masters: () => load(cOff, e),
      replicas: () => load(cReplicas, e),
    });
    const mr = m(runs.masters, (r) => r.rps);
    const rr = m(runs.replicas, (r) => r.rps);
    console.log(
      `${e} 200, uncached on the cluster: replicas ${rr.toFixed(0)} req/s = ${(rr / mr).toFixed(2)}x masters only ${mr.toFixed(0)} req/s; API CPU/request ${m(runs.replicas, (r) => r.cpuUs).toFixed(0)} vs ${m(runs.masters, (r) => r.cpuUs).toFixed(0)} µs; p99 ${m(runs.replicas, (r) => r.p99)} / ${m(runs.masters, (r) => r.p99)} ms  [replicas ${rpsList(runs.replicas)} | masters ${rpsList(runs.masters)}]`,
    );
  }
  console.log(`load after ${loadAverage()}`);
} finally {
  await Promise.all([single.close(), cluster.close()]);
}
