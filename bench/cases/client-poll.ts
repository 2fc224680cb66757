import { connect, createServer, type Server } from 'node:net';
import { createReadApiClient } from '../../clients/typescript/src/index.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { numberArg } from '../lib/options.js';
import { BASE_PATH as BASE } from '../lib/stack.js';
import { loadAverage, standalone } from '../lib/standalone.js';

// Issue 40: what polling 1,000 installations costs with the official client (bulk requests of
// 100 with their conditional cache) against a naive fetch loop (one plain request per
// installation), side by side in one run against one API while flows change (the client's own
// CPU per call: client-cpu.ts). Standalone, on its own Redis prefix, which it drops:
//   npx tsx bench/cases/client-poll.ts [--seconds 300] [--interval 10] [--installations 1000]
//     [--rate 200]
// Changes: --rate battery reports a second over random installations (the demo's simulator
// sends 200 events/s), written through the consumers' store. Bytes: everything both directions
// through a counting TCP proxy per side (headers included). Quota units as the API charges
// them: a 200 is one, a 304 a tenth. Reported per poll: a side whose polls outlast the interval
// runs fewer of them, so totals would not compare.

const SECONDS = numberArg('seconds', 300);
const INTERVAL_S = numberArg('interval', 10);
const INSTALLATIONS = numberArg('installations', 1_000);
const RATE = numberArg('rate', 200);
const PORT = numberArg('port', 18295);

const bench = standalone('client-poll');
const key = newApiKey();
const ids = Array.from({ length: INSTALLATIONS }, (_, i) => 7_000 + i);
const WINDOW_S = 36_000;

interface Side {
  requests: number;
  notModified: number;
  units: number;
  bytes: number;
  polls: number;
}

/** A TCP proxy to the API that counts the bytes it carries both ways. */
function countingProxy(target: number, side: Side): Promise<{ port: number; server: Server }> {
  const server = createServer((socket) => {
    const upstream = connect(target, '127.0.0.1');
    socket.on('data', (b) => {
      side.bytes += b.length;
    });
    upstream.on('data', (b) => {
      side.bytes += b.length;
    });
    socket.pipe(upstream).pipe(socket);
    socket.on('error', () => upstream.destroy());
    upstream.on('error', () => socket.destroy());
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ port: (server.address() as { port: number }).port, server }),
    ),
  );
}

const charge = (side: Side, status: number) => {
  side.requests++;
  if (status === 304) side.notModified++;
  side.units += status === 304 ? 0.1 : 1;
};

async function changes(until: number): Promise<number> {
  let n = 0;
  const start = performance.now();
  while (Date.now() < until) {
    const wait = start + (n * 1000) / RATE - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const id = ids[Math.floor(Math.random() * ids.length)] as number;
    const record = device('battery', id, id, Date.now(), { soe: n % 100, powerDc: n });
    await bench.seed.devices(id, [{ category: 'battery', record }], Date.now(), WINDOW_S);
    n++;
  }
  return n;
}

/** Every INTERVAL_S until `until`, one poll of every installation. */
async function everyInterval(until: number, poll: () => Promise<void>, side: Side) {
  while (Date.now() < until) {
    const started = Date.now();
    await poll();
    side.polls++;
    const wait = started + INTERVAL_S * 1000 - Date.now();
    if (wait > 0 && Date.now() + wait < until) await new Promise((r) => setTimeout(r, wait));
    else if (wait > 0) break;
  }
}

async function naivePoll(origin: string, side: Side) {
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++] as number;
      const res = await fetch(
        `${origin}${BASE}/getInstallationCurrentEnergyFlow?installationId=${id}`,
        {
          headers: { 'api-key': key },
        },
      );
      await res.json();
      charge(side, res.status);
    }
  };
  await Promise.all(Array.from({ length: 10 }, worker));
}

try {
  console.log(
    `client-poll bench: ${INSTALLATIONS} installations, ${SECONDS} s, poll every ${INTERVAL_S} s, ${RATE} changes/s; load ${loadAverage()}`,
  );
  for (const id of ids) {
    await bench.seed.installation(installation(id));
    const record = device('battery', id, id, Date.now(), { soe: 50, powerDc: 0 });
    await bench.seed.devices(id, [{ category: 'battery', record }], Date.now(), WINDOW_S);
  }
  await bench.seed.liveKey(key, { app: 1, installations: ids.map((id) => installation(id)) });
  await bench.api(PORT, { ONLINE_WINDOW_SECONDS: String(WINDOW_S) });

  const naive: Side = { requests: 0, notModified: 0, units: 0, bytes: 0, polls: 0 };
  const withClient: Side = { requests: 0, notModified: 0, units: 0, bytes: 0, polls: 0 };
  const naiveProxy = await countingProxy(PORT, naive);
  const clientProxy = await countingProxy(PORT, withClient);
  const client = createReadApiClient({
    baseUrl: `http://127.0.0.1:${clientProxy.port}${BASE}`,
    apiKey: key,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      charge(withClient, res.status);
      return res;
    },
  });
  const until = Date.now() + SECONDS * 1000;
  const [written] = await Promise.all([
    changes(until),
    everyInterval(until, () => naivePoll(`http://127.0.0.1:${naiveProxy.port}`, naive), naive),
    everyInterval(until, async () => void (await client.getEnergyFlows(ids)), withClient),
  ]);
  naiveProxy.server.close();
  clientProxy.server.close();
  const perPoll = (s: Side) => ({
    requests: s.requests / s.polls,
    units: s.units / s.polls,
    kib: s.bytes / 1024 / s.polls,
  });
  const row = (name: string, s: Side) => {
    const p = perPoll(s);
    return `| ${name} | ${s.polls} | ${p.requests.toFixed(0)} | ${p.units.toFixed(1)} | ${p.kib.toFixed(0)} | ${s.notModified} of ${s.requests} |`;
  };
  const ratio = (a: number, b: number) => (b === 0 ? 'n/a' : `${(a / b).toFixed(1)}x`);
  const [n, c] = [perPoll(naive), perPoll(withClient)];
  console.log(`\n${written} changes written (${(written / SECONDS).toFixed(0)}/s)\n`);
  console.log(
    '| side | polls | requests / poll | quota units / poll | KiB / poll (both ways) | 304s |',
  );
  console.log('|---|---|---|---|---|---|');
  console.log(row('naive fetch loop', naive));
  console.log(row('client (bulk + ETag)', withClient));
  console.log(
    `| naive / client, per poll | | ${ratio(n.requests, c.requests)} | ${ratio(n.units, c.units)} | ${ratio(n.kib, c.kib)} | |`,
  );
  // Each change lands on a random installation: a chunk of 100 is unchanged after an interval
  // only if none of the interval's changes hit it.
  const unchangedChunk = (1 - 100 / INSTALLATIONS) ** ((written / SECONDS) * INTERVAL_S);
  const why =
    unchangedChunk < 0.5
      ? 'nearly every chunk changes each poll, so the gain comes from the bulk requests (100 ids each), not from 304s'
      : 'most chunks are unchanged each poll, so 304s add to the gain of the bulk requests';
  console.log(
    `\nAt ${(written / SECONDS).toFixed(0)} changes/s a chunk of 100 ids is unchanged after ${INTERVAL_S} s with probability ${unchangedChunk.toPrecision(2)}: ${why}.`,
  );
  console.log('\n(target: quota units and bytes >= 5x fewer with the client)');

  console.log("\n(the client's own CPU per call against raw fetch: bench/cases/client-cpu.ts)");
} finally {
  await bench.close();
}
