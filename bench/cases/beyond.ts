import { installation, newApiKey } from '../../tools/seed/records.js';
import { cannon, loadRunner, medianOf, pick, type Run, rpsList } from '../lib/side-by-side.js';
import { BASE_PATH as BASE } from '../lib/stack.js';
import { loadAverage, seedFlowModel, standalone } from '../lib/standalone.js';
import { ensureWrk, pinTarget, wrkRun } from '../lib/wrk.js';

// beyond.md cases, side by side in one run (issue 15 targets): a 304 against the bare Fastify
// baseline route, quota bookkeeping on against off, and the bulk flow's server CPU per
// installation against single requests. Standalone, on its own Redis prefix, which it drops:
//   npx tsx bench/cases/beyond.ts [--seconds 6] [--alternations 3] [--connections 32]
// The API processes are `node --import tsx api/main.ts`; CPU from /proc/<pid>/stat. The quota
// target row is taken with wrk on a CPU of its own (bench/lib/wrk.ts), the others with autocannon.

const LOAD = loadRunner({ connections: 32, non2xxExpected: true });
const INSTALLATIONS = 100;
const APPS = 8;

const bench = standalone('beyond');
const insts = Array.from({ length: INSTALLATIONS }, (_, i) => installation(1000 + i));
const keys = Array.from({ length: APPS }, () => newApiKey());

/** B C B C …: median of each side. */
async function sideBySide(
  name: string,
  baseline: () => Promise<Run>,
  candidate: () => Promise<Run>,
): Promise<Record<'base' | 'cand', { rps: number; cpuUs: number }>> {
  const { b, c } = await LOAD.alternate({ b: baseline, c: candidate });
  return report(name, b, c);
}

/** The medians of each side's runs, printed. */
function report(
  name: string,
  b: Run[],
  c: Run[],
): Record<'base' | 'cand', { rps: number; cpuUs: number }> {
  const mid = (runs: Run[]) => ({
    rps: medianOf(runs, (r) => r.rps),
    cpuUs: medianOf(runs, (r) => r.cpuUs),
  });
  const base = mid(b);
  const cand = mid(c);
  console.log(
    `${name}: candidate ${cand.rps.toFixed(0)} req/s (${cand.cpuUs.toFixed(0)} µs CPU/req), baseline ${base.rps.toFixed(0)} req/s (${base.cpuUs.toFixed(0)} µs CPU/req), ratio ${(cand.rps / base.rps).toFixed(2)}x  [runs ${rpsList(c)} | ${rpsList(b)}]`,
  );
  return { base, cand };
}

ensureWrk();
try {
  await seedFlowModel(bench.seed, insts, keys, {
    inverter: { powerAc: 1200, powerDcPvTotal: 1300 },
    battery: { soe: 55, ratedEnergy: 10_000, powerDc: 300 },
    energyMeter: { powerAc: -400 },
  });
  // Quotas on against off: two APIs in one process (bench/servers/quota-pair.ts), as two
  // identical API processes measured 0.94x-1.16x apart here (bench/HISTORY.md).
  const [plain, quotaOff] = await Promise.all([
    bench.api(18281),
    bench.api(18284, {}, 'bench/servers/quota-pair.ts'),
  ]);
  const quota = { ...quotaOff, origin: 'http://127.0.0.1:18285' };
  // The bare Fastify route answers each installation's flow body as the API served it.
  const bodies: Array<[string, string]> = [];
  const tags = new Map<number, string>();
  for (const inst of insts) {
    const res = await fetch(
      `${plain.origin}${BASE}/getInstallationCurrentEnergyFlow?installationId=${inst.id}`,
      {
        headers: { 'api-key': keys[0] as string },
      },
    );
    bodies.push([String(inst.id), await res.text()]);
    tags.set(inst.id, res.headers.get('etag') as string);
  }
  const baseline = await bench.baseline(18283, { getInstallationCurrentEnergyFlow: bodies });

  const flowPath = (id: number) => `${BASE}/getInstallationCurrentEnergyFlow?installationId=${id}`;
  const single = () => {
    const inst = pick(insts);
    return { path: flowPath(inst.id), headers: { 'api-key': pick(keys) } };
  };
  const conditional = () => {
    const inst = pick(insts);
    return {
      path: flowPath(inst.id),
      headers: { 'api-key': pick(keys), 'if-none-match': tags.get(inst.id) as string },
    };
  };
  const ids = insts.map((i) => i.id).join(',');
  const bulk = () => ({
    path: `${BASE}/getInstallationsCurrentEnergyFlow?installationIds=${ids}`,
    headers: { 'api-key': pick(keys) },
  });
  const bare = () => ({ path: flowPath(pick(insts).id), headers: {} });

  // Warm up every path (JIT, script caches).
  for (const [server, request] of [
    [baseline, bare],
    [plain, single],
    [plain, conditional],
    [plain, bulk],
    [quotaOff, single],
    [quota, single],
  ] as const) {
    await cannon(server.origin, request, { connections: 8, duration: 1 });
  }

  console.log(
    `load ${loadAverage()}; ${LOAD.connections} connections, ${LOAD.seconds} s x ${LOAD.alternations}`,
  );
  await sideBySide(
    '304 getInstallationCurrentEnergyFlow vs bare Fastify (target >= 0.9x)',
    () => LOAD.run(baseline, bare),
    () => LOAD.run(plain, conditional),
  );
  await sideBySide(
    '200 getInstallationCurrentEnergyFlow vs bare Fastify (reference)',
    () => LOAD.run(baseline, bare),
    () => LOAD.run(plain, single),
  );
  await sideBySide(
    'quota on vs off, 200 flow, both in one process, autocannon (reference)',
    () => LOAD.run(quotaOff, single),
    () => LOAD.run(quota, single),
  );
  // The target row: wrk on CPU 0, the pair process alone on CPU 1 (bench/lib/wrk.ts), twice
  // the alternations as the runs spread widely on this machine.
  pinTarget(quotaOff.pid);
  const wrkLoad = { seconds: LOAD.seconds, connections: LOAD.connections };
  const wrkSides = { b: [] as Run[], c: [] as Run[] };
  for (let i = 0; i < LOAD.alternations * 2; i++) {
    wrkSides.b.push(wrkRun(quotaOff, single, wrkLoad));
    wrkSides.c.push(wrkRun(quota, single, wrkLoad));
  }
  report(
    'quota on vs off, 200 flow, both in one process on its own CPU, wrk (target >= 0.9x)',
    wrkSides.b,
    wrkSides.c,
  );
  const b = await sideBySide(
    'bulk of 100 vs single requests (req/s not comparable)',
    () => LOAD.run(plain, single),
    () => LOAD.run(plain, bulk),
  );
  const perInstallation = b.cand.cpuUs / INSTALLATIONS;
  console.log(
    `bulk: API CPU per answered installation ${perInstallation.toFixed(1)} µs vs ${b.base.cpuUs.toFixed(1)} µs per single request: ${(b.base.cpuUs / perInstallation).toFixed(1)}x cheaper (target >= 20x)`,
  );
  console.log(`load after ${loadAverage()}`);
} finally {
  await bench.close();
}
