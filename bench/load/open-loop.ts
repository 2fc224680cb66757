import { writeFileSync } from 'node:fs';
import { Pool } from 'undici';
import { Samples, summarizeLatencies } from '../lib/stats.js';
import { type LoadResult, pathOf, readSpec } from './load-spec.js';

// Open loop: requests scheduled at fixed intervals (rate/s) over a keep-alive pool; latency is
// measured from each request's INTENDED send time, so a stalled server is charged for the
// requests it delayed (no coordinated omission). Usage: open-loop.ts <spec.json> <result.json>

const [specFile, outFile] = process.argv.slice(2) as [string, string];
const { spec, pairs } = readSpec(specFile);
const rate = spec.rate ?? 1_000;
const pool = new Pool(spec.origin, { connections: spec.connections, pipelining: 1 });
const samples = new Samples();
const intervalMs = 1_000 / rate;
const total = Math.floor(rate * spec.durationS);
let sent = 0;
let non2xx = 0;
let errors = 0;
let inflight = 0;

const fire = (intendedMs: number) => {
  const pair = pairs[Math.floor(Math.random() * pairs.length)] as (typeof pairs)[number];
  inflight++;
  pool
    .request({ method: 'GET', path: pathOf(spec, pair), headers: { 'api-key': pair[0] } })
    .then(async (res) => {
      await res.body.arrayBuffer();
      if (res.statusCode < 200 || res.statusCode > 299) non2xx++;
      samples.push(performance.now() - intendedMs);
    })
    .catch(() => {
      errors++;
    })
    .finally(() => {
      inflight--;
    });
};

const start = performance.now() + 50;
await new Promise<void>((resolve) => {
  const tick = () => {
    const now = performance.now();
    while (sent < total && start + sent * intervalMs <= now) fire(start + sent++ * intervalMs);
    if (sent >= total) return resolve();
    setTimeout(tick, Math.max(0, Math.min(1, start + sent * intervalMs - now)));
  };
  tick();
});
// Let the tail finish (bounded), so slow responses are counted rather than dropped.
const drainUntil = performance.now() + 10_000;
while (inflight > 0 && performance.now() < drainUntil) await new Promise((r) => setTimeout(r, 5));
const backlog = inflight;
const latency = summarizeLatencies(samples.values());
const out: LoadResult = {
  requests: latency.count,
  durationS: spec.durationS,
  rps: latency.count / spec.durationS,
  non2xx,
  errors: errors + backlog,
  p50: latency.p50,
  p99: latency.p99,
  p999: latency.p999,
  max: latency.max,
  cpuSeconds: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
  backlog,
};
writeFileSync(outFile, JSON.stringify(out));
await pool.close();
process.exit(0);
