import { installation, newApiKey } from '../../test/support-api/fixtures.js';
import { BASE_PATH as BASE } from '../lib/context.js';
import { numberArg } from '../lib/options.js';
import { cannon, loadRunner, medianOf, pick, type Run, rpsList } from '../lib/side-by-side.js';
import {
  type Bodies,
  loadAverage,
  seedFlowModel,
  standalone,
  type Target,
} from '../lib/standalone.js';

// The read targets of issue 15 with the near-cache on (the default), side by side in one run:
// the API with API_NEAR_CACHE_ENTRIES at its default, the API with it 0 (the uncached path) and
// the bare Fastify baseline route answering the same bodies from a Map (B ON OFF, alternating).
// Each request a uniformly random (key, installation) pair; every installation fits the cache.
// getInstallations: keys of their own granted 200 installations each (~27 KB bodies, as in
// bench/RESULTS.md's read table); it reads the key view every time (no cache), the baseline
// answers the same body per key. Every server gets the key header, the baseline ignores it.
// Beside them, issue 38's miss baseline: a bare server answering the same stored bytes with one
// Redis read per request (bench/servers/one-read-server.ts), R in the alternation.
// Standalone, on its own Redis prefix, which it drops:
//   npx tsx bench/cases/near-cache-reads.ts [--seconds 6] [--alternations 3] [--connections 64]
//     [--only getInstallationCurrentEnergyFlow]

const LOAD = loadRunner({ connections: 64 });
const INSTALLATIONS = numberArg('installations', 1_000);
const APPS = 4;

const bench = standalone('near-cache');
const insts = Array.from({ length: INSTALLATIONS }, (_, i) => installation(5000 + i));
const keys = Array.from({ length: APPS }, () => newApiKey());
const LIST_KEYS = 4;
const LIST_SIZE = 200;
const listKeys = Array.from({ length: LIST_KEYS }, () => newApiKey());

const load = (server: Target, path: (id: number) => string, keyList: string[]): Promise<Run> =>
  LOAD.run(server, () => ({ path: path(pick(insts).id), headers: { 'api-key': pick(keyList) } }));

try {
  await seedFlowModel(bench.seed, insts, keys, {
    inverter: { powerAc: 1200 },
    battery: { soe: 55, powerDc: 300 },
    energyMeter: { powerAc: -400 },
  });
  for (let a = 0; a < LIST_KEYS; a++) {
    const granted = insts.slice(a * LIST_SIZE, (a + 1) * LIST_SIZE);
    await bench.seed.liveKey(listKeys[a] as string, { app: 100 + a, installations: granted });
  }
  const [on, off] = await Promise.all([
    bench.api(18295),
    bench.api(18296, { API_NEAR_CACHE_ENTRIES: '0' }),
  ]);
  const endpoints = [
    'getInstallationCurrentEnergyFlow',
    'getInstallationDevices',
    'getInstallations',
  ] as const;
  const keysOf = (endpoint: string) => (endpoint === 'getInstallations' ? listKeys : keys);
  const bodies: Bodies = {};
  for (const endpoint of endpoints) {
    bodies[endpoint] = [];
    if (endpoint === 'getInstallations') {
      for (const key of listKeys) {
        const res = await fetch(`${off.origin}${BASE}/${endpoint}`, {
          headers: { 'api-key': key },
        });
        bodies[endpoint].push([key, await res.text()]);
      }
      continue;
    }
    for (const inst of insts) {
      const res = await fetch(`${off.origin}${BASE}/${endpoint}?installationId=${inst.id}`, {
        headers: { 'api-key': keys[0] as string },
      });
      bodies[endpoint].push([String(inst.id), await res.text()]);
    }
  }
  const baseline = await bench.baseline(18297, bodies);
  const oneRead = await bench.oneRead(
    18298,
    Object.fromEntries([
      ...keys.map((k, a) => [k, a + 1] as const),
      ...listKeys.map((k, a) => [k, 100 + a] as const),
    ]),
  );

  const at = (endpoint: string) => (id: number) =>
    endpoint === 'getInstallations'
      ? `${BASE}/${endpoint}`
      : `${BASE}/${endpoint}?installationId=${id}`;
  // Warm up: JIT, script caches, and the near-cache: every (key, installation) pair in turn,
  // twice (an entry is kept by the read after the one that subscribes), so no measured run
  // pays for filling it. Random pairs left ~1 in 8 cold, which the first endpoint paid.
  for (const endpoint of endpoints) {
    const list = keysOf(endpoint);
    for (const server of [baseline, oneRead, on, off]) {
      let n = 0;
      await cannon(
        server.origin,
        () => {
          const i = n++;
          return {
            path: at(endpoint)(
              (insts[Math.floor(i / list.length) % INSTALLATIONS] as { id: number }).id,
            ),
            headers: { 'api-key': list[i % list.length] as string },
          };
        },
        { connections: 8, amount: 2 * list.length * INSTALLATIONS },
      );
    }
  }
  console.log(
    `load ${loadAverage()}; ${INSTALLATIONS} installations x ${APPS} keys, ${LOAD.connections} connections, ${LOAD.seconds} s x ${LOAD.alternations}, B R ON OFF alternating`,
  );
  const targets = {
    getInstallationCurrentEnergyFlow: 0.85,
    getInstallationDevices: 0.7,
    getInstallations: 0.7,
  };
  const only = process.argv.indexOf('--only');
  const measured = only > 0 ? endpoints.filter((e) => e === process.argv[only + 1]) : endpoints;
  for (const endpoint of measured) {
    const runs = await LOAD.alternate({
      b: () => load(baseline, at(endpoint), keysOf(endpoint)),
      r: () => load(oneRead, at(endpoint), keysOf(endpoint)),
      on: () => load(on, at(endpoint), keysOf(endpoint)),
      off: () => load(off, at(endpoint), keysOf(endpoint)),
    });
    const m = medianOf;
    const b = m(runs.b, (r) => r.rps);
    const c = m(runs.on, (r) => r.rps);
    const o = m(runs.off, (r) => r.rps);
    const r1 = m(runs.r, (r) => r.rps);
    console.log(
      `${endpoint} 200 against one Redis read per request (${r1.toFixed(0)} req/s, ${m(runs.r, (r) => r.cpuUs).toFixed(0)} µs, p99 ${m(runs.r, (r) => r.p99)} ms): near-cache ${(c / r1).toFixed(2)}x, uncached ${(o / r1).toFixed(2)}x (issue 38: misses >= 0.8x, getInstallations uncached >= 0.5x)`,
    );
    console.log(
      `${endpoint} 200: near-cache ${c.toFixed(0)} req/s = ${(c / b).toFixed(2)}x baseline (target >= ${targets[endpoint]}x); uncached ${o.toFixed(0)} req/s = ${(o / b).toFixed(2)}x; baseline ${b.toFixed(0)} req/s. API CPU/request ${m(runs.on, (r) => r.cpuUs).toFixed(0)} µs cached, ${m(runs.off, (r) => r.cpuUs).toFixed(0)} µs uncached, baseline ${m(runs.b, (r) => r.cpuUs).toFixed(0)} µs; p99 ${m(runs.on, (r) => r.p99)} / ${m(runs.off, (r) => r.p99)} / ${m(runs.b, (r) => r.p99)} ms  [runs on ${rpsList(runs.on)} | off ${rpsList(runs.off)} | base ${rpsList(runs.b)}]`,
    );
  }
  console.log(`load after ${loadAverage()}`);
} finally {
  await bench.close();
}
