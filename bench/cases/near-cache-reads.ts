import { join } from 'node:path';
import {
  applicationsOf,
  captureBodies,
  keysOf,
  pathOf,
  READ_ENDPOINTS,
  type ReadEndpoint,
  readModel,
  seedReadModel,
  warmPairs,
} from '../lib/near-cache-model.js';
import { checkoutArg, numberArg, stringArg } from '../lib/options.js';
import { loadRunner, medianOf, pick, type Run, rpsList } from '../lib/side-by-side.js';
import { loadAverage, standalone, type Target } from '../lib/standalone.js';

// The read targets of issue 15 with the near-cache on (the default), side by side in one run:
// the API with API_NEAR_CACHE_ENTRIES at its default, the API with it 0 (the uncached path) and
// the bare Fastify baseline route answering the same bodies from a Map (B ON OFF, alternating).
// Each request a uniformly random (key, installation) pair; every installation fits the cache.
// getInstallations: keys of their own granted 200 installations each (~27 KB bodies, as in
// bench/RESULTS.md's read table); it reads the key view every time (no cache), the baseline
// answers the same body per key. Every server gets the key header, the baseline ignores it.
// Beside them, issue 38's miss baseline: a bare server answering the same stored bytes with one
// Redis read per request (bench/servers/one-read-server.ts), R in the alternation.
// The same reads counted in instructions: read-instructions.ts.
// Standalone, on its own Redis prefix, which it drops:
// `--at DIR`: both APIs from a checkout of another commit (`git worktree add DIR <commit>` inside
// this repository, so its imports find node_modules here).
//   npx tsx bench/cases/near-cache-reads.ts [--seconds 6] [--alternations 3] [--connections 64]
//     [--only getInstallationCurrentEnergyFlow] [--at .local/wt-683440a]

const LOAD = loadRunner({ connections: 64 });
const INSTALLATIONS = numberArg('installations', 1_000);

const at = checkoutArg('at');
const apiScript = at === null ? undefined : join(at, 'api/main.ts');

const bench = standalone('near-cache');
const model = readModel(INSTALLATIONS);

const load = (server: Target, endpoint: ReadEndpoint): Promise<Run> =>
  LOAD.run(server, () => ({
    path: pathOf(endpoint, pick(model.insts).id),
    headers: { 'api-key': pick(keysOf(model, endpoint)) },
  }));

try {
  await seedReadModel(bench.seed, model);
  const [on, off] = await Promise.all([
    bench.api(18295, {}, apiScript),
    bench.api(18296, { API_NEAR_CACHE_ENTRIES: '0' }, apiScript),
  ]);
  const endpoints = READ_ENDPOINTS;
  const baseline = await bench.baseline(18297, await captureBodies(off.origin, model));
  const oneRead = await bench.oneRead(18298, applicationsOf(model));
  for (const endpoint of endpoints) {
    for (const server of [baseline, oneRead, on, off]) {
      await warmPairs(server.origin, model, endpoint);
    }
  }
  console.log(
    `load ${loadAverage()}; ${INSTALLATIONS} installations x ${model.keys.length} keys, ${LOAD.connections} connections, ${LOAD.seconds} s x ${LOAD.alternations}, B R ON OFF alternating`,
  );
  const targets = {
    getInstallationCurrentEnergyFlow: 0.85,
    getInstallationDevices: 0.7,
    getInstallations: 0.7,
  };
  const only = stringArg('only');
  const measured = only === null ? endpoints : endpoints.filter((e) => e === only);
  for (const endpoint of measured) {
    const runs = await LOAD.alternate({
      b: () => load(baseline, endpoint),
      r: () => load(oneRead, endpoint),
      on: () => load(on, endpoint),
      off: () => load(off, endpoint),
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
