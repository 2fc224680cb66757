import { readFileSync } from 'node:fs';
import { Agent, type ClientRequest, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { writeEpoch } from '../../src/read-model/epoch.js';
import { createKeys } from '../../src/read-model/keys.js';
import { installation, newApiKey } from '../../test/support-api/fixtures.js';
import { BASE_PATH as BASE } from '../lib/context.js';
import { numberArg } from '../lib/options.js';
import { cannon } from '../lib/side-by-side.js';
import { loadAverage, seedFlowModel, standalone } from '../lib/standalone.js';
import { median, percentile } from '../lib/stats.js';

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

/** Abuser's sockets and streams; `admitted` counts those the server kept open. */
interface Abuse {
  readonly sockets: Socket[];
  streamStatuses: Map<number, number>;
  stop(): void;
}

async function abuse(): Promise<Abuse> {
  const sockets: Socket[] = [];
  const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const streamStatuses = new Map<number, number>();
  const requests: ClientRequest[] = [];
  // Streams first: they are what the per-key cap bounds; the sockets then take what is left.
  const streams = Array.from(
    { length: STREAMS },
    (_, i) =>
      new Promise<void>((resolve) => {
        const id = insts[i % insts.length]?.id;
        const req = request(
          `http://127.0.0.1:${PORT}${BASE}/streams/installationCurrentEnergyFlow?installationId=${id}`,
          { agent, localAddress: ABUSER, headers: { 'api-key': abusive } },
          (res) => {
            const code = res.statusCode ?? 0;
            streamStatuses.set(code, (streamStatuses.get(code) ?? 0) + 1);
            res.resume();
            resolve();
          },
        );
        req.on('error', () => {
          streamStatuses.set(0, (streamStatuses.get(0) ?? 0) + 1);
          resolve();
        });
        req.setTimeout(10_000, () => req.destroy());
        req.end();
        requests.push(req);
      }),
  );
  await Promise.all(streams);
  const opened: Promise<void>[] = [];
  for (let i = 0; i < SOCKETS; i++) {
    const socket = connect({ port: PORT, host: '127.0.0.1', localAddress: ABUSER });
    socket.on('error', () => undefined);
    sockets.push(socket);
    opened.push(new Promise((resolve) => socket.once('connect', resolve).once('close', resolve)));
  }
  await Promise.all(opened);
  return {
    sockets,
    streamStatuses,
    stop() {
      for (const r of requests) r.destroy();
      agent.destroy();
      for (const s of sockets) s.destroy();
    },
  };
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

const normalLoad = () =>
  cannon(
    `http://127.0.0.1:${PORT}`,
    () => ({
      path: `${BASE}/getInstallationCurrentEnergyFlow?installationId=${insts[Math.floor(Math.random() * insts.length)]?.id}`,
      headers: { 'api-key': normal },
    }),
    { connections: CONNECTIONS, duration: SECONDS },
  );

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
  await normalLoad(); // warm-up
  const quiet: number[] = [];
  const abused: number[] = [];
  const probes = { quiet: [] as number[], api: [] as number[], ops: [] as number[] };
  let errors = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const q = await normalLoad();
    quiet.push(q.latency.p99);
    probes.quiet.push(...(await probe(PORT, '/readyz')));
    const attack = await abuse();
    // The probes alone first (the normal client's load would measure the machine), then the
    // normal client.
    probes.api.push(...(await probe(PORT, '/readyz')));
    probes.ops.push(...(await probe(OPS_PORT, '/readyz')));
    const a = await normalLoad();
    const held = attack.sockets.filter((s) => !s.destroyed).length;
    abused.push(a.latency.p99);
    errors += a.errors + a.non2xx;
    console.log(
      `  round ${round + 1}: p99 quiet ${q.latency.p99} ms, abused ${a.latency.p99} ms (${a.requests.total} requests, ${a.errors + a.non2xx} failed); abuser's side still open: ${held} of ${attack.sockets.length} idle sockets, streams by status ${JSON.stringify(Object.fromEntries(attack.streamStatuses))}`,
    );
    attack.stop();
    await new Promise((resolve) => setTimeout(resolve, 1_500));
  }
  const p99 = (l: number[]) =>
    percentile(
      [...l].sort((x, y) => x - y),
      99,
    ).toFixed(1);
  const ratio = median(abused) / Math.max(1, median(quiet));
  console.log(
    `normal client p99: quiet ${median(quiet)} ms, abused ${median(abused)} ms, ratio ${ratio.toFixed(2)}x (target <= 2x); failed requests while abused: ${errors}`,
  );
  console.log(
    `/readyz p99: quiet ${p99(probes.quiet)} ms; abused: API port ${p99(probes.api)} ms, ops port ${p99(probes.ops)} ms (target <= 100 ms); API pid ${api.pid}; load ${loadAverage()}`,
  );
} finally {
  await bench.close();
}
