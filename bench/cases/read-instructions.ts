import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { instructionsSinceZero, zeroInstructions } from '../lib/instructions.js';
import {
  captureBodies,
  keysOf,
  pathOf,
  type ReadEndpoint,
  readModel,
  seedReadModel,
  warmPairs,
} from '../lib/near-cache-model.js';
import { checkoutArg, numberArg, stringArg } from '../lib/options.js';
import { freePort } from '../lib/processes.js';
import { cannon, pick } from '../lib/side-by-side.js';
import { loadAverage, standalone, type Target } from '../lib/standalone.js';

// Issue 38: the cached reads' cost per request against the bare baseline route, counted in
// instructions (bench/lib/instructions.ts): CPU time moves ±15 % between runs here. The API on
// its defaults (near-cache on) and the baseline server of near-cache-reads.ts run under
// callgrind, on the same model and bodies; this process, not under it, loads them. Per
// endpoint, uncounted: every (key, installation) pair twice, then `--warmup` random pairs (V8
// still compiles on its worker threads some 15k requests in: spans of the bare route then cost
// up to 2.5x a settled one). Then `--rounds` spans of `--requests` random pairs, each counted
// from zero, printed in turn; the last is the figure. Each endpoint is counted right after its
// own warm-up: switching endpoints or idling sets V8 compiling again. A settled process repeats
// its count within a few tenths of a percent, but two starts of the same API can settle some
// 10 % apart (the API at 683440a: 91k and 99.5k instructions per cached flow read, the baseline
// 65.3k both times): compare runs, not single spans. The servers' timers (the API's epoch
// check, its event-loop-delay monitor) run at wall-clock rate while callgrind slows requests
// ~50x: they are counted apart while idle, last, and their share taken out of each span.
// Every installation fits the near-cache, so the API answers from memory. `--at DIR`: the API
// of another commit, checked out with `git worktree add DIR <commit>` inside this repository
// (its imports find node_modules here). The servers run on this process's node:
// `/usr/bin/node --import tsx …` for the system's Node 20.
//   npx tsx bench/cases/read-instructions.ts [--requests 3000] [--warmup 20000] [--rounds 3]
//     [--connections 8] [--installations 100] [--only getInstallationCurrentEnergyFlow]
//     [--at .local/wt-5a0003f]

const REQUESTS = numberArg('requests', 3_000);
const WARMUP = numberArg('warmup', 20_000);
const ROUNDS = numberArg('rounds', 3);
const CONNECTIONS = numberArg('connections', 8);
const INSTALLATIONS = numberArg('installations', 100);
// How long the servers' timers are counted with no request.
const IDLE_MS = 10_000;
const AT = checkoutArg('at') ?? undefined;
const only = stringArg('only');
const ENDPOINTS: readonly ReadEndpoint[] = only
  ? [only as ReadEndpoint]
  : ['getInstallationCurrentEnergyFlow', 'getInstallationDevices'];

const dir = mkdtempSync(join(tmpdir(), 'read-instructions-'));
const bench = standalone('read-instructions', { callgrindDir: dir });
const model = readModel(INSTALLATIONS);
type Side = 'baseline' | 'api';

/** `amount` random (key, installation) reads of `endpoint`; throws unless every one was a 200. */
async function load(server: Target, endpoint: ReadEndpoint, amount: number): Promise<void> {
  const keys = keysOf(model, endpoint);
  const result = await cannon(
    server.origin,
    () => ({
      path: pathOf(endpoint, pick(model.insts).id),
      headers: { 'api-key': pick(keys) },
    }),
    { connections: CONNECTIONS, amount },
  );
  if (result.errors > 0 || result.non2xx > 0 || result.requests.total !== amount) {
    throw new Error(
      `${server.origin}: ${result.requests.total} of ${amount} answered, ${result.errors} errors, ${result.non2xx} non-2xx`,
    );
  }
}

/** Instructions over `REQUESTS` reads, and the span's length in seconds. */
async function counted(server: Target, endpoint: ReadEndpoint) {
  zeroInstructions(server.pid);
  const started = performance.now();
  await load(server, endpoint, REQUESTS);
  const seconds = (performance.now() - started) / 1000;
  return { total: instructionsSinceZero(server.pid, server.callgrindOut as string), seconds };
}

/** Instructions per second with no requests: the timers' share of a span. */
async function idleRate(server: Target): Promise<number> {
  zeroInstructions(server.pid);
  await new Promise((r) => setTimeout(r, IDLE_MS));
  return instructionsSinceZero(server.pid, server.callgrindOut as string) / (IDLE_MS / 1000);
}

const k = (n: number) => `${(n / 1000).toFixed(1)}k`;

try {
  console.log(
    `load before ${loadAverage()}; node ${process.version}; API from ${AT ?? 'this checkout'}`,
  );
  await seedReadModel(bench.seed, model);
  // Entries and key records are re-read after this age; under callgrind's slower clock the
  // default 60 s would turn some measured hits into misses that no real run of as many
  // requests would see.
  const api = await bench.api(
    await freePort(),
    { API_NEAR_CACHE_MAX_AGE_MS: String(3_600_000) },
    AT === undefined ? undefined : join(AT, 'api/main.ts'),
  );
  const bodies = await captureBodies(api.origin, model, ENDPOINTS);
  const sides: Record<Side, Target> = {
    baseline: await bench.baseline(await freePort(), bodies),
    api,
  };
  console.log(
    `${INSTALLATIONS} installations x ${model.keys.length} keys, ${CONNECTIONS} connections; per endpoint ${WARMUP} requests, then ${ROUNDS} spans of ${REQUESTS}`,
  );
  // Each endpoint is counted right after its own warm-up: switching endpoints, or idling, sets
  // V8 compiling again for a while.
  const spans: Array<{ endpoint: ReadEndpoint; side: Side; total: number; seconds: number }> = [];
  for (const endpoint of ENDPOINTS) {
    for (const server of Object.values(sides)) {
      await warmPairs(server.origin, model, endpoint, CONNECTIONS);
      await load(server, endpoint, WARMUP);
    }
    for (let r = 0; r < ROUNDS; r++) {
      for (const side of ['baseline', 'api'] as const) {
        spans.push({ endpoint, side, ...(await counted(sides[side], endpoint)) });
      }
    }
  }
  // Counted last: idling first would set V8 compiling again.
  const idle = { baseline: await idleRate(sides.baseline), api: await idleRate(sides.api) };
  console.log(
    `idle timers: baseline ${k(idle.baseline)}, API ${k(idle.api)} instructions/s, taken out of each span`,
  );
  const perRequest = (s: (typeof spans)[number]) => (s.total - idle[s.side] * s.seconds) / REQUESTS;
  for (const endpoint of ENDPOINTS) {
    const of = (side: Side) => spans.filter((s) => s.endpoint === endpoint && s.side === side);
    for (const side of ['baseline', 'api'] as const) {
      console.log(
        `  ${endpoint} ${side}: ${of(side)
          .map((s) => `${k(perRequest(s))} (${(REQUESTS / s.seconds).toFixed(0)} req/s)`)
          .join(', ')} instructions/request by round (req/s under callgrind)`,
      );
    }
    // The last round: V8 has had the longest to settle.
    const b = perRequest(of('baseline').at(-1) as (typeof spans)[number]);
    const a = perRequest(of('api').at(-1) as (typeof spans)[number]);
    console.log(
      `${endpoint} 200 from the near-cache: API ${k(a)} instructions/request, baseline ${k(b)}: ${(a / b).toFixed(3)}x (target <= 1.2x)`,
    );
  }
  console.log(`load after ${loadAverage()}`);
} finally {
  await bench.close();
  rmSync(dir, { recursive: true, force: true });
}
