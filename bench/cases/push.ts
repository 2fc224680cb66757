import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { Redis } from 'ioredis';
import { changeChannel, parseChangeChannel } from '../../src/read-model/keys.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { numberArg } from '../lib/options.js';
import { BASE_PATH as BASE, REDIS_URL } from '../lib/stack.js';
import { loadAverage, standalone } from '../lib/standalone.js';
import { percentile } from '../lib/stats.js';

// beyond.md §5, issue 15 targets: change-to-event latency of the energy-flow stream (p99 <= 250
// ms) against the floor of the change feed itself (a bare SSUBSCRIBE client on the same
// channels, same run), and N open streams on one API process with its memory per stream.
// Standalone, on its own Redis prefix, which it drops; run it with a high open-file limit:
//   bash -c 'ulimit -n 20000; npx tsx bench/cases/push.ts [--streams 10000] [--changes 300]'
// Changes are written through the consumers' own store and batch planner (the projection's
// write path, tools/seed/read-model-seed.ts), one installation each, at --rate per second; the
// latency of a change runs from the write's acknowledgement (MULTI/EXEC answered) to the event
// on the client (for N streams per installation: the last of them).

const STREAMS = numberArg('streams', 10_000);
const INSTALLATIONS = numberArg('installations', 1_000);
const CHANGES = numberArg('changes', 300);
const RATE = numberArg('rate', 50);
const PORT = numberArg('port', 18291);
const WINDOW_S = 36_000;

const bench = standalone('push');
const seed = bench.seed;
const key = newApiKey();
const ids = Array.from({ length: INSTALLATIONS }, (_, i) => 3000 + i);
const t0 = Date.now() - 3 * 3600_000;
const seq = new Map<number, number>();
let marker = 0;

/** One telemetry batch through the consumers' store: the battery's powerDc is the marker. */
async function change(id: number, power: number): Promise<void> {
  const k = (seq.get(id) ?? 0) + 1;
  seq.set(id, k);
  const seen = t0 + k * 1000;
  await seed.devices(
    id,
    [{ category: 'battery', record: device('battery', id, id, seen, { soe: 50, powerDc: power }) }],
    Date.now(),
    WINDOW_S,
  );
}

const rssKiB = async (pid: number) => {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0);
};

interface Client {
  readonly id: number;
  /** marker -> when its event arrived */
  readonly seen: Map<number, number>;
  first: boolean;
}

const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
const clients: Client[] = [];
const POWER = /"batteryPower":(-?\d+)/;

function openStream(id: number): Promise<Client> {
  return new Promise((resolve, reject) => {
    const client: Client = { id, seen: new Map(), first: false };
    const req = request(
      `http://127.0.0.1:${PORT}${BASE}/streams/installationCurrentEnergyFlow?installationId=${id}`,
      { agent, headers: { 'api-key': key, accept: 'text/event-stream' } },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`stream ${id}: ${res.statusCode}`));
        res.setEncoding('utf8');
        let buffer = '';
        res.on('data', (chunk: string) => {
          const now = performance.now();
          buffer += chunk;
          let end = buffer.indexOf('\n\n');
          while (end >= 0) {
            const m = POWER.exec(buffer.slice(0, end));
            if (m) client.seen.set(Number(m[1]), now);
            if (!client.first) {
              client.first = true;
              resolve(client);
            }
            buffer = buffer.slice(end + 2);
            end = buffer.indexOf('\n\n');
          }
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * `count` changes at up to RATE/s over random installations, one write at a time (the store's
 * optimistic transaction wants its connection to itself); latency per change, ms. A stream
 * sends the served flow, so two changes close together may reach it as one event: a change
 * counts as delivered by the first event carrying it or a later one of its installation.
 */
async function measure(count: number, floor: Map<number, number>) {
  const acked: Array<{ m: number; id: number; at: number }> = [];
  const start = performance.now();
  for (let i = 0; i < count; i++) {
    const wait = start + (i * 1000) / RATE - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const id = ids[Math.floor(Math.random() * ids.length)] as number;
    const m = 100_000 + ++marker;
    await change(id, m);
    acked.push({ m, id, at: performance.now() });
  }
  await new Promise((r) => setTimeout(r, 1_000));
  const byInstallation = new Map<number, Client[]>();
  for (const c of clients) byInstallation.set(c.id, [...(byInstallation.get(c.id) ?? []), c]);
  const latencies: number[] = [];
  const floors: number[] = [];
  let missing = 0;
  for (const { m, id, at } of acked) {
    const arrivals = (byInstallation.get(id) ?? []).map((c) => {
      let first = Number.POSITIVE_INFINITY;
      for (const [seen, when] of c.seen) if (seen >= m && when < first) first = when;
      return first;
    });
    const last = Math.max(...arrivals);
    if (last === Number.POSITIVE_INFINITY) missing++;
    else latencies.push(last - at);
    const f = floor.get(m);
    if (f !== undefined) floors.push(f - at);
  }
  const sort = (l: number[]) => l.sort((a, b) => a - b);
  return { latencies: sort(latencies), floors: sort(floors), missing };
}

try {
  console.log(
    `push bench: ${STREAMS} streams over ${INSTALLATIONS} installations; load ${loadAverage()}`,
  );
  for (const id of ids) {
    await seed.installation(installation(id));
    await change(id, 0);
  }
  await seed.liveKey(key, { app: 1, installations: ids.map((id) => installation(id)) });

  const api = await bench.api(PORT, {
    ONLINE_WINDOW_SECONDS: String(WINDOW_S),
    API_MAX_CONNECTIONS: String(STREAMS + 1_000),
    API_STREAMS_MAX: String(STREAMS + 1_000),
    // One key from one address holds every stream: the per-party caps are not what is measured.
    API_MAX_CONNECTIONS_PER_CLIENT: '0',
    API_STREAMS_PER_KEY: String(STREAMS + 1_000),
    API_STREAMS_PER_APPLICATION: String(STREAMS + 1_000),
  });
  // The change feed's floor: a bare sharded subscriber on every channel, in this process.
  const floorConn = new Redis(REDIS_URL);
  const floor = new Map<number, number>();
  floorConn.on('smessageBuffer', () => undefined);
  for (const id of ids) await floorConn.ssubscribe(changeChannel(seed.keys, id));
  const floorReader = new Redis(REDIS_URL);
  floorConn.on('smessage', (channel: string) => {
    const id = parseChangeChannel(seed.keys, channel);
    const at = performance.now();
    // The announcement says which installation changed; the marker is read back, as a client would.
    if (id !== null) {
      void floorReader.hget(seed.keys.flow(id), 'data').then((data) => {
        const m = POWER.exec(data ?? '');
        if (m && !floor.has(Number(m[1]))) floor.set(Number(m[1]), at);
      });
    }
  });

  // Idle API first, then a few streams (one per installation) for the latency case.
  await fetch(`${api.origin}/healthz`);
  const idleKiB = await rssKiB(api.pid);
  const few = Math.min(200, ids.length);
  for (let i = 0; i < few; i++) clients.push(await openStream(ids[i] as number));
  const idsBefore = ids.splice(few);
  const light = await measure(CHANGES, floor);
  ids.push(...idsBefore);
  report(`latency, ${few} streams (1 per installation)`, light);

  // Capacity: STREAMS streams in total, spread evenly over the installations.
  const beforeKiB = await rssKiB(api.pid);
  const opened = clients.length;
  const batch: Promise<Client>[] = [];
  for (let i = opened; i < STREAMS; i++) {
    batch.push(openStream(ids[i % ids.length] as number));
    if (batch.length === 200) clients.push(...(await Promise.all(batch.splice(0))));
  }
  clients.push(...(await Promise.all(batch)));
  await new Promise((r) => setTimeout(r, 2_000));
  const afterKiB = await rssKiB(api.pid);
  console.log(
    `capacity: ${clients.length} open streams on one API process; RSS idle ${(idleKiB / 1024).toFixed(0)} MiB, with ${opened} streams ${(beforeKiB / 1024).toFixed(0)} MiB, with ${clients.length} ${(afterKiB / 1024).toFixed(0)} MiB: ${(((afterKiB - beforeKiB) * 1024) / (clients.length - opened)).toFixed(0)} bytes per stream (RSS delta / streams)`,
  );
  const heavy = await measure(CHANGES, floor);
  report(
    `latency, ${clients.length} streams (${Math.round(clients.length / ids.length)} per installation, the last to receive counts)`,
    heavy,
  );
  floorConn.disconnect();
  floorReader.disconnect();
} finally {
  agent.destroy();
  await bench.close();
}

function report(name: string, r: { latencies: number[]; floors: number[]; missing: number }) {
  const f = (l: number[], p: number) => (l.length ? percentile(l, p).toFixed(1) : 'n/a');
  console.log(
    `${name}: change-to-event p50 ${f(r.latencies, 50)} ms, p99 ${f(r.latencies, 99)} ms, max ${f(r.latencies, 100)} ms (target p99 <= 250 ms) over ${r.latencies.length} changes, ${r.missing} missing; change feed floor (bare SSUBSCRIBE + read back) p50 ${f(r.floors, 50)} ms, p99 ${f(r.floors, 99)} ms`,
  );
}
