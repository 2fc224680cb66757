import { writeFileSync } from 'node:fs';
import { Samples, summarizeLatencies } from '../lib/stats.js';
import { HttpConnection } from './http-connection.js';
import { type LoadResult, pathOf, readSpec } from './load-spec.js';

// Open loop: requests scheduled at fixed intervals (rate/s) over `connections` keep-alive
// connections, one request in flight on each; a request due while every connection is busy
// waits its turn. Latency is measured from each request's INTENDED send time, so a stalled
// server is charged for the requests it delayed (no coordinated omission).
// Plain sockets with requests formatted once per pair (http-connection.ts), not undici: the
// generator shares the two cores with what it measures, and undici's ~40 µs per request took a
// whole core at 25k req/s, CPU the measured processes then lacked.
// Usage: open-loop.ts <spec.json> <result.json>

const [specFile, outFile] = process.argv.slice(2) as [string, string];
const { spec, pairs } = readSpec(specFile);
const rate = spec.rate ?? 1_000;
const origin = new URL(spec.origin);
const requests = pairs.map((pair) =>
  Buffer.from(
    `GET ${pathOf(spec, pair)} HTTP/1.1\r\nhost: ${origin.host}\r\napi-key: ${pair[0]}\r\n\r\n`,
    'latin1',
  ),
);
const samples = new Samples();
const intervalMs = 1_000 / rate;
const total = Math.floor(rate * spec.durationS);
let sent = 0;
let answered = 0;
let non2xx = 0;
let errors = 0;

/** Intended send times of requests due while every connection was busy, oldest first. */
const waiting: number[] = [];
let waitingHead = 0;
const idle: HttpConnection[] = [];

const send = (conn: HttpConnection, intendedMs: number) =>
  conn.send(requests[Math.floor(Math.random() * requests.length)] as Buffer, intendedMs);

const connections = Array.from(
  { length: spec.connections },
  () =>
    new HttpConnection(Number(origin.port), origin.hostname, {
      onResponse(conn, status, intendedMs) {
        answered++;
        if (status < 200 || status > 299) non2xx++;
        samples.push(performance.now() - intendedMs);
        next(conn);
      },
      onFailure(conn) {
        errors++;
        next(conn);
      },
    }),
);

function next(conn: HttpConnection): void {
  if (waitingHead < waiting.length) {
    send(conn, waiting[waitingHead++] as number);
    if (waitingHead === waiting.length) waiting.length = waitingHead = 0;
  } else idle.push(conn);
}

await Promise.all(connections.map((c) => c.ready()));
idle.push(...connections);

const fire = (intendedMs: number) => {
  const conn = idle.pop();
  if (conn) send(conn, intendedMs);
  else waiting.push(intendedMs);
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
while (answered + errors < sent && performance.now() < drainUntil)
  await new Promise((r) => setTimeout(r, 5));
const backlog = sent - answered - errors;
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
for (const c of connections) c.close();
process.exit(0);
