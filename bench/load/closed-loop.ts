import type { EventEmitter } from 'node:events';
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Samples, summarizeLatencies } from '../lib/stats.js';
import { type LoadResult, pairPicker, pathOf, readSpec } from './load-spec.js';

// Closed loop: autocannon with N connections, each request a (key, installation) pair picked
// by the spec's pattern (uniformly random by default). Latencies are taken from autocannon's per-response timing (sub-ms), not
// its whole-ms histogram. Usage: closed-loop.ts <spec.json> <result.json>

interface AutocannonResult {
  requests: { total: number };
  duration: number;
  non2xx: number;
  errors: number;
  timeouts: number;
}
// autocannon ships no types: the slice used here, typed by hand.
type Autocannon = (opts: Record<string, unknown>) => EventEmitter & PromiseLike<AutocannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

const [specFile, outFile] = process.argv.slice(2) as [string, string];
const { spec, pairs } = readSpec(specFile);
const samples = new Samples();
const pick = pairPicker(spec.pattern ?? 'uniform', pairs.length);

const instance = autocannon({
  url: spec.origin,
  connections: spec.connections,
  duration: spec.durationS,
  requests: [
    {
      method: 'GET',
      setupRequest: (request: Record<string, unknown>) => {
        const pair = pairs[pick()] as (typeof pairs)[number];
        request.path = pathOf(spec, pair);
        request.headers = { 'api-key': pair[0] };
        return request;
      },
    },
  ],
});
instance.on('response', (_client: unknown, _status: number, _bytes: number, ms: number) =>
  samples.push(ms),
);
const result = await instance;
const latency = summarizeLatencies(samples.values());
const out: LoadResult = {
  requests: result.requests.total,
  durationS: result.duration,
  rps: result.requests.total / result.duration,
  non2xx: result.non2xx,
  errors: result.errors + result.timeouts,
  p50: latency.p50,
  p99: latency.p99,
  p999: latency.p999,
  max: latency.max,
  cpuSeconds: (process.cpuUsage().user + process.cpuUsage().system) / 1e6,
};
writeFileSync(outFile, JSON.stringify(out));
