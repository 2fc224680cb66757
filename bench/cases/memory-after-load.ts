import { readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { numberArg, stringArg } from '../lib/options.js';
import { waitUntil } from '../lib/processes.js';
import { BASE_PATH as BASE } from '../lib/stack.js';
import { loadAverage, seedFlowModel, standalone } from '../lib/standalone.js';

// Issue 57 item 4: the API's resident memory at rest before a fuzz-like load, at its peak, and
// at rest after it, with the V8 heap, external and array-buffer memory beside it (the probe,
// bench/servers/api-memory-probe.ts, writes the API's own process.memoryUsage()). Standalone,
// on its own Redis prefix, which it drops:
//   npx tsx bench/cases/memory-after-load.ts [--seconds 60] [--idle 60] [--concurrency 12]
//     [--br-callers 8] [--port 19010] [--main /other/checkout/api/main.ts] [--env MALLOC_ARENA_MAX=2,...]
// `--main`: another checkout's API under the same probe and load (the code before a fix);
// `--env`: extra variables of the API process (an allocator setting, LD_PRELOAD=jemalloc).
// The load, `concurrency` callers for `seconds`: the 2,500-installation list streamed in br,
// gzip and identity, pages walked by cursor, bulk flows of 100, single flows of random keys
// (unknown keys among them), a small list buffered in br, and streams direct and through the
// docs proxy, each read to its first event and dropped; beside them `br-callers` asking only for
// the br list, as the fuzzing did (eight at once). Target: after-rest / before-rest <= 1.5.

const SECONDS = numberArg('seconds', 60);
const IDLE = numberArg('idle', 60);
const CONCURRENCY = numberArg('concurrency', 12);
/** Callers beside them asking only for the br list: the eight coded lists at once. */
const BR_CALLERS = numberArg('br-callers', 8);
const PORT = numberArg('port', 19010);
const MAIN = stringArg('main');
const EXTRA_ENV = Object.fromEntries(
  (stringArg('env') ?? '')
    // A comma starts the next variable only before NAME=: MALLOC_CONF's own options use commas.
    .split(/,(?=[A-Z_][A-Z0-9_]*=)/)
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const LIST = 2_500;
const FLOWS = 100;
const FLOW_KEYS = 20;

const bench = standalone('memory');
const memoryFile = join(tmpdir(), `${bench.prefix.replace(/[:]/g, '-')}memory.json`);
const all = Array.from({ length: LIST }, (_, i) => installation(5000 + i));
const flowInsts = all.slice(0, FLOWS);
const flowKeys = Array.from({ length: FLOW_KEYS }, () => newApiKey());
const listKey = newApiKey();
const agent = new Agent({ keepAlive: true, maxSockets: (CONCURRENCY + BR_CALLERS) * 2 });
const pick = <T>(list: readonly T[]) => list[Math.floor(Math.random() * list.length)] as T;

interface Answer {
  readonly status: number;
  readonly bytes: number;
  readonly body: string;
}

/**
 * One GET; `firstChunk`: the answer is dropped at its first body bytes (a stream's event).
 * Status 0: the connection was reset before the answer ended.
 */
function get(path: string, headers: Record<string, string>, firstChunk = false): Promise<Answer> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port: PORT, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        if (firstChunk) {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, bytes: chunk.length, body: '' });
        }
      });
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        const text = res.headers['content-encoding'] ? '' : body.toString('utf8');
        resolve({ status: res.statusCode ?? 0, bytes: body.length, body: text });
      });
      res.on('error', () => resolve({ status: 0, bytes: 0, body: '' }));
    });
    // A connection reset (the API closing a request it timed out) is an answer of its own.
    req.on('error', () => resolve({ status: 0, bytes: 0, body: '' }));
    req.end();
  });
}

const surfaces: Record<string, () => Promise<Answer>> = {
  'list br': () => get(`${BASE}/getInstallations`, { 'api-key': listKey, 'accept-encoding': 'br' }),
  'list gzip': () =>
    get(`${BASE}/getInstallations`, { 'api-key': listKey, 'accept-encoding': 'gzip' }),
  'list identity': () => get(`${BASE}/getInstallations`, { 'api-key': listKey }),
  async pages() {
    const limit = pick([100, 250, 1000]);
    let cursor = '';
    let last: Answer;
    do {
      last = await get(`${BASE}/getInstallations?limit=${limit}${cursor}`, { 'api-key': listKey });
      const next = /"nextCursor":"([^"]+)"/.exec(last.body)?.[1];
      cursor = next ? `&cursor=${next}` : '';
    } while (cursor);
    return last;
  },
  bulk: () =>
    get(
      `${BASE}/getInstallationsCurrentEnergyFlow?installationIds=${flowInsts.map((i) => i.id).join(',')}`,
      { 'api-key': pick(flowKeys), 'accept-encoding': pick(['br', 'gzip', 'identity']) },
    ),
  flow: () =>
    get(`${BASE}/getInstallationCurrentEnergyFlow?installationId=${pick(flowInsts).id}`, {
      'api-key': Math.random() < 0.2 ? newApiKey() : pick(flowKeys),
    }),
  'small list br': () =>
    get(`${BASE}/getInstallations`, { 'api-key': pick(flowKeys), 'accept-encoding': 'br' }),
  stream: () =>
    get(
      `${BASE}/streams/installationCurrentEnergyFlow?installationId=${pick(flowInsts).id}`,
      { 'api-key': pick(flowKeys) },
      true,
    ),
  'proxied stream': () =>
    get(
      `/docs/proxy${BASE}/streams/installationCurrentEnergyFlow?installationId=${pick(flowInsts).id}`,
      { 'api-key': pick(flowKeys) },
      true,
    ),
};

const MIB = 2 ** 20;
/** A field of /proc/<pid>/status, MiB. */
const statusOf = (pid: number, field: string) =>
  Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) /
  1024;
const probe = () =>
  JSON.parse(readFileSync(memoryFile, 'utf8')) as Record<
    | 'rss'
    | 'heapUsed'
    | 'heapTotal'
    | 'external'
    | 'arrayBuffers'
    | 'gcRuns'
    | 'majorGcs'
    | 'lastMajorGcAt'
    | 'lastMajorGcMs'
    | 'at',
    number
  >;
async function metricsRss(): Promise<number> {
  const text = (await get('/metrics', {})).body;
  return Number(/^process_resident_memory_bytes (\S+)/m.exec(text)?.[1]) / MIB;
}
/** RSS (/proc, /metrics) and the probe's figures, MiB; `gc`: after a full GC in the API. */
async function atRest(pid: number, label: string, gc = false) {
  if (gc) {
    const before = probe().gcRuns;
    process.kill(pid, 'SIGUSR2');
    await waitUntil('the probe GC', async () => probe().gcRuns > before, 10_000);
    // V8 unmaps the pages a GC freed on a background thread: RSS a moment later.
    await sleep(5_000);
  }
  const m = probe();
  const rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const rollupOf = (field: string) =>
    Number(new RegExp(`${field}:\\s+(\\d+)`).exec(rollup)?.[1]) / 1024;
  const figures = {
    rss: statusOf(pid, 'VmRSS'),
    // Freed with MADV_FREE, still counted in RSS until the kernel needs the pages; and RSS in
    // transparent huge pages, which a partial free does not return.
    lazyFree: rollupOf('LazyFree'),
    hugePages: rollupOf('AnonHugePages'),
    metricsRss: await metricsRss(),
    heapUsed: m.heapUsed / MIB,
    heapTotal: m.heapTotal / MIB,
    external: m.external / MIB,
    arrayBuffers: m.arrayBuffers / MIB,
  };
  console.log(
    `${label.padEnd(26)} rss ${figures.rss.toFixed(0)} MiB (/metrics ${figures.metricsRss.toFixed(0)}; lazy-free ${figures.lazyFree.toFixed(0)}, huge pages ${figures.hugePages.toFixed(0)}), heapUsed ${figures.heapUsed.toFixed(0)}, heapTotal ${figures.heapTotal.toFixed(0)}, external ${figures.external.toFixed(0)}, arrayBuffers ${figures.arrayBuffers.toFixed(0)}`,
  );
  return figures;
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

try {
  console.log(`load ${loadAverage()}; seeding ${LIST} installations`);
  await seedFlowModel(bench.seed, flowInsts, flowKeys, {
    inverter: { powerAc: 1200, powerDcPvTotal: 1300 },
    battery: { soe: 55, ratedEnergy: 10_000, powerDc: 300 },
    energyMeter: { powerAc: -400 },
  });
  for (let i = FLOWS; i < LIST; i += 250) {
    await Promise.all(all.slice(i, i + 250).map((inst) => bench.seed.installation(inst)));
  }
  await bench.seed.liveKey(listKey, { app: FLOW_KEYS + 1, installations: all });
  const api = await bench.api(
    PORT,
    {
      MEMORY_FILE: memoryFile,
      ...(MAIN ? { API_MAIN: MAIN } : {}),
      ...EXTRA_ENV,
    },
    'bench/servers/api-memory-probe.ts',
  );
  console.log(
    `API ${MAIN ?? 'api/main.ts'} pid ${api.pid}, env ${JSON.stringify(EXTRA_ENV)}; ${CONCURRENCY} callers and ${BR_CALLERS} br-list callers for ${SECONDS} s, then ${IDLE} s idle`,
  );
  await waitUntil('the probe', async () => probe().at > 0, 10_000);
  // Warm-up: every surface once, so lazily built state is in the baseline, then a rest.
  for (const run of Object.values(surfaces)) await run();
  // Longer than the API's idle check (api/heap-tuning.ts, two 10 s looks), so the rest before
  // the load is measured in the state the rest after it is.
  await sleep(25_000);
  const before = await atRest(api.pid, 'at rest before');

  const counts = new Map<string, { n: number; statuses: Record<number, number> }>();
  const names = Object.keys(surfaces);
  const deadline = Date.now() + SECONDS * 1000;
  let peakHeap = 0;
  const sampler = setInterval(() => {
    peakHeap = Math.max(peakHeap, probe().heapUsed / MIB);
  }, 200);
  const callers = [
    ...Array.from({ length: CONCURRENCY }, () => () => pick(names)),
    ...Array.from({ length: BR_CALLERS }, () => () => 'list br'),
  ];
  await Promise.all(
    callers.map(async (next) => {
      while (Date.now() < deadline) {
        const name = next();
        const answer = await (surfaces[name] as () => Promise<Answer>)();
        const c = counts.get(name) ?? { n: 0, statuses: {} };
        c.n++;
        c.statuses[answer.status] = (c.statuses[answer.status] ?? 0) + 1;
        counts.set(name, c);
      }
    }),
  );
  clearInterval(sampler);
  const peak = { rss: statusOf(api.pid, 'VmHWM') };
  console.log(
    `${'peak (VmHWM)'.padEnd(26)} rss ${peak.rss.toFixed(0)} MiB, heapUsed ${peakHeap.toFixed(0)} (200 ms samples)`,
  );
  for (const [name, c] of [...counts].sort()) {
    console.log(
      `  ${name.padEnd(16)} ${String(c.n).padStart(6)} requests ${JSON.stringify(c.statuses)}`,
    );
  }
  agent.destroy();
  // The idle minute in steps: whether V8 collects by itself at rest (its memory reducer), and
  // what RSS does meanwhile.
  const majorAtLoadEnd = probe().majorGcs;
  for (let s = 10; s <= Math.max(IDLE, 10); s += 10) {
    await sleep(10_000);
    const m = probe();
    console.log(
      `  idle ${String(s).padStart(3)} s: rss ${statusOf(api.pid, 'VmRSS').toFixed(0)} MiB, heapUsed ${(m.heapUsed / MIB).toFixed(0)}, heapTotal ${(m.heapTotal / MIB).toFixed(0)}, major GCs since the load ${m.majorGcs - majorAtLoadEnd} (the last took ${m.lastMajorGcMs.toFixed(0)} ms)`,
    );
  }
  const after = await atRest(api.pid, `at rest after ${IDLE} s idle`);
  const afterGc = await atRest(api.pid, 'after a full GC', true);
  console.log(
    `RSS before ${before.rss.toFixed(0)} MiB, peak ${peak.rss.toFixed(0)} MiB, after ${after.rss.toFixed(0)} MiB (${afterGc.rss.toFixed(0)} after GC): after/before ${(after.rss / before.rss).toFixed(2)}x (target <= 1.5x); outside the V8 heap (rss - heapTotal) ${(before.rss - before.heapTotal).toFixed(0)} -> ${(after.rss - after.heapTotal).toFixed(0)} MiB`,
  );
  console.log(`load after ${loadAverage()}`);
} finally {
  agent.destroy();
  await bench.close();
}
