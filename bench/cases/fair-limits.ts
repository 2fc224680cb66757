import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeEpoch } from '../../src/read-model/epoch.js';
import { createKeys } from '../../src/read-model/keys.js';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { numberArg } from '../lib/options.js';
import { ROOT } from '../lib/processes.js';
import { BASE_PATH as BASE } from '../lib/stack.js';
import { loadAverage, seedFlowModel, standalone } from '../lib/standalone.js';
import { median, percentile } from '../lib/stats.js';
import { ensureWrk, wrkRun } from '../lib/wrk.js';

// Issue 25: a normal client's p99 while one abusive client tries to hold --sockets idle
// connections and --streams energy-flow streams (target: within 2x of the same run without
// it), and how long the probes take meanwhile (target: within 100 ms), against the API on its
// default limits. Loopback only: the abuser binds 127.0.0.2, the normal client and the probes
// 127.0.0.1, so the server sees two clients. Alternates quiet and abused phases (--rounds,
// --seconds each); bounded at about rounds * 2 * (seconds + 10) s. It needs open files for the
// abuser's sockets and the API's; run it as
//   bash -c 'ulimit -n 20000; npx tsx bench/cases/fair-limits.ts [--sockets 5000] [--streams 1000]'

const SOCKETS = numberArg('sockets', 5_000);
const STREAMS = numberArg('streams', 1_000);
const SECONDS = numberArg('seconds', 5);
const ROUNDS = numberArg('rounds', 2);
const CONNECTIONS = numberArg('connections', 8);
const PORT = numberArg('port', 18295);
const OPS_PORT = numberArg('ops-port', 18296);
const ABUSER = '127.0.0.2';

const softLimit = Number(
  /Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 0,
);
if (softLimit < SOCKETS + STREAMS + 1_000) {
  console.error(
    `fair-limits bench: open-file limit ${softLimit} < ${SOCKETS + STREAMS + 1_000}; run it under ulimit -n 20000`,
  );
  process.exit(2);
}

const bench = standalone('fair-limits');
const insts = Array.from({ length: 20 }, (_, i) => installation(5000 + i));
const normal = newApiKey();
const abusive = newApiKey();

interface Abuse {
  readonly report: { sockets: number; streams: Record<string, number> };
  stop(): void;
}

/** The abuser in a process of its own (fair-limits-abuser.ts); resolves once it holds all. */
function abuse(): Promise<Abuse> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      join(ROOT, 'bench/cases/fair-limits-abuser.ts'),
      String(PORT),
      ABUSER,
      abusive,
      insts.map((i) => i.id).join(','),
      String(SOCKETS),
      String(STREAMS),
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (!out.includes('\n')) return;
      resolve({ report: JSON.parse(out), stop: () => child.kill('SIGTERM') });
    });
    child.once('exit', (code) => reject(new Error(`abuser exited with ${code}`)));
  });
}

/** Probe latencies (ms): `count` sequential GETs of `path` on `port`; a failure is Infinity. */
async function probe(port: number, path: string, count = 10): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    const res = await fetch(`http://127.0.0.1:${port}${path}`).catch(() => null);
    await res?.arrayBuffer();
    out.push(res?.ok ? performance.now() - t : Number.POSITIVE_INFINITY);
  }
  return out;
}

/** The API's refusal and drop counters, by `error` or `reason` label. */
async function refusals(): Promise<Map<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${OPS_PORT}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(
    /^api_(?:refused_requests|dropped_connections)_total\{(?:error|reason)="([^"]+)"\} (\d+)/gm,
  )) {
    out.set(m[1] as string, Number(m[2]));
  }
  return out;
}

const delta = (before: Map<string, number>, after: Map<string, number>) =>
  Object.fromEntries(
    [...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)]).filter(([, v]) => v !== 0),
  );

/** Probes every 20 ms until `busy` settles. */
async function probeWhile(port: number, path: string, busy: Promise<unknown>): Promise<number[]> {
  let done = false;
  const settle = () => {
    done = true;
  };
  busy.then(settle, settle);
  const out: number[] = [];
  while (!done) {
    out.push(...(await probe(port, path, 1)));
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return out;
}

// wrk (C, µs resolution): autocannon's whole milliseconds read a sub-millisecond p99 as 0.
const normalLoad = (pid: number) =>
  wrkRun(
    { origin: `http://127.0.0.1:${PORT}`, pid },
    () => ({
      path: `${BASE}/getInstallationCurrentEnergyFlow?installationId=${insts[Math.floor(Math.random() * insts.length)]?.id}`,
      headers: { 'api-key': normal },
    }),
    { connections: CONNECTIONS, seconds: SECONDS },
  );

ensureWrk();
try {
  console.log(
    `fair-limits bench: abuser ${SOCKETS} sockets + ${STREAMS} streams from ${ABUSER}; normal client ${CONNECTIONS} connections, ${SECONDS} s x ${ROUNDS} rounds; load ${loadAverage()}`,
  );
  await seedFlowModel(bench.seed, insts, [normal, abusive], {
    inverter: { powerAc: 1200, powerDcPvTotal: 1300 },
    battery: { soe: 55, ratedEnergy: 10_000, powerDc: 300 },
    energyMeter: { powerAc: -400 },
  });
  // A built read model, so /readyz answers 200.
  await writeEpoch(bench.redis, createKeys(bench.prefix), Date.now(), { complete: true });
  // The API on its default limits, with its ops listener.
  const api = await bench.api(PORT, { API_OPS_PORT: String(OPS_PORT) });
  normalLoad(api.pid); // warm-up
  const quiet: number[] = [];
  const abused: number[] = [];
  const probes = { quiet: [] as number[], api: [] as number[], ops: [] as number[] };
  let errors = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const q = normalLoad(api.pid);
    quiet.push(q.p99);
    probes.quiet.push(...(await probe(PORT, '/readyz')));
    // The probes alone, every 20 ms while the abuser opens its sockets and streams and holds
    // them 1.5 s (with the normal client's load they would measure the machine); then the
    // normal client.
    const counted = await refusals();
    const attacking = abuse();
    const [attack, apiProbes, opsProbes] = await Promise.all([
      attacking,
      probeWhile(PORT, '/readyz', attacking),
      probeWhile(OPS_PORT, '/readyz', attacking),
    ]);
    probes.api.push(...apiProbes);
    probes.ops.push(...opsProbes);
    const a = normalLoad(api.pid);
    const refused = delta(counted, await refusals());
    abused.push(a.p99);
    errors += a.failed;
    console.log(
      `  round ${round + 1}: p99 quiet ${q.p99.toFixed(2)} ms, abused ${a.p99.toFixed(2)} ms (${a.total} requests, ${a.failed} failed); abuser's streams by status ${JSON.stringify(attack.report.streams)}, its ${attack.report.sockets} sockets and streams refused or closed by the server ${JSON.stringify(refused)}`,
    );
    attack.stop();
    await new Promise((resolve) => setTimeout(resolve, 2_000));
  }
  const p99 = (l: number[]) =>
    percentile(
      [...l].sort((x, y) => x - y),
      99,
    ).toFixed(1);
  const ratio = median(abused) / median(quiet);
  console.log(
    `normal client p99: quiet ${median(quiet).toFixed(2)} ms, abused ${median(abused).toFixed(2)} ms, ratio ${ratio.toFixed(2)}x (target <= 2x); failed requests while abused: ${errors}`,
  );
  console.log(
    `/readyz p99 (median): quiet ${p99(probes.quiet)} ms; during the flood: API port ${p99(probes.api)} (${median(probes.api).toFixed(1)}) ms, ops port ${p99(probes.ops)} (${median(probes.ops).toFixed(1)}) ms (target <= 100 ms); API pid ${api.pid}; load ${loadAverage()}`,
  );
} finally {
  await bench.close();
}
