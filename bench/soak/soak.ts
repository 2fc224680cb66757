import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { createKafkajsClient } from '../../consumers/kafka/kafkajs-client.js';
import { groupIdOf } from '../../src/consumer-groups.js';
import { createLogger } from '../../src/logger.js';
import { apiKeyCreated, applicationUpserted } from '../../test/e2e/support/events.js';
import { faultStack, ROOT } from '../../test/faults/fault-stack.js';
import {
  connectedProducer,
  kafkaFor,
  seedFleet,
  send,
  startLoad,
  telemetryEvent,
} from '../../test/faults/load.js';
import { startService } from '../../test/faults/processes.js';
import { newApiKey } from '../../tools/seed/records.js';

// The soak (docs/reliability.md): measures the consumer's maximum ingest and the API's maximum
// read rate, then runs both at 50 % for N minutes, sampling consumer and API memory (RSS) and
// consumer lag every 10 s, and plots them (gnuplot, Debian's gnuplot-nox) to a PNG.
//   npm run soak -- --minutes 30 [--out docs/soak.png]
// Its own Kafka and Redis (infra/stack.sh on 19692/19693/16979, data in .local/soak), stopped
// at the end. Not in CI.

const { values: args } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    out: { type: 'string', default: 'docs/soak.png' },
  },
});
const MINUTES = Number(args.minutes);
const SAMPLE_MS = 10_000;
const INSTALLATIONS = Array.from({ length: 500 }, (_, i) => i + 1);
const stack = faultStack({ kafka: 19692, controller: 19693, redis: 16979 }, 'soak');
const run = `soak${Date.now().toString(36)}`;
const topics = {
  installations: `${run}.installations`,
  telemetry: `${run}.telemetry`,
  access: `${run}.access`,
  deadletter: `${run}.deadletter`,
};
const apiPort = 19710;
const healthPort = 19701;
const apiBase = `http://127.0.0.1:${apiPort}/application/v1`;
const env = {
  KAFKA_BROKERS: stack.kafkaBrokers,
  REDIS_URL: stack.redisUrl,
  REDIS_KEY_PREFIX: `${run}:`,
  TOPIC_INSTALLATIONS: topics.installations,
  TOPIC_TELEMETRY: topics.telemetry,
  TOPIC_ACCESS: topics.access,
  TOPIC_DEADLETTER: topics.deadletter,
  CONSUMER_GROUP: run,
  CONSUMER_HEALTH_PORT: String(healthPort),
  CONSUMER_LAG_INTERVAL_MS: '2000',
  API_PORT: String(apiPort),
  LOG_LEVEL: 'warn',
  ONLINE_WINDOW_SECONDS: '3600',
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const rssMb = (pid: number) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
};

async function until(what: string, ms: number, probe: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

const admin = await (async () => {
  await stack.start();
  return createKafkajsClient({
    brokers: [stack.kafkaBrokers],
    clientId: 'soak',
    logger: createLogger({ level: 'silent', name: 'soak' }),
  });
})();

async function telemetryPosition(): Promise<{ committed: number; end: number }> {
  const a = await admin.createAdmin();
  try {
    const [ends, committed] = await Promise.all([
      a.endOffsets(topics.telemetry),
      a.committedOffsets(groupIdOf({ consumer: { groupId: run } }, 'telemetry'), topics.telemetry),
    ]);
    let c = 0;
    let e = 0;
    for (const end of ends) {
      e += Number(end.end);
      c += Number(committed.find((x) => x.partition === end.partition)?.offset ?? end.start);
    }
    return { committed: c, end: e };
  } finally {
    await a.disconnect();
  }
}

const key = newApiKey();
const producer = await connectedProducer(kafkaFor(stack.kafkaBrokers));
const consumer = startService('consumer', 'consumers/main.ts', env);
const api = startService('api', 'api/main.ts', env);
let exitCode = 0;
try {
  await until(
    'consumer ready',
    90_000,
    async () => (await fetch(`http://127.0.0.1:${healthPort}/readyz`)).ok,
  );
  await seedFleet(producer, topics, INSTALLATIONS, [
    applicationUpserted(1, { type: 'user', id: 9 }),
    apiKeyCreated('soak', 1, key),
  ]);
  await until(
    'API ready',
    90_000,
    async () => (await fetch(`http://127.0.0.1:${apiPort}/readyz`)).ok,
  );

  // Maximum ingest: a backlog produced faster than it is consumed, timed until committed.
  const BACKLOG = 60_000;
  const start = await telemetryPosition();
  const t0 = Date.now();
  for (let i = 0; i < BACKLOG; i += 2_000) {
    await send(
      producer,
      topics.telemetry,
      Array.from({ length: 2_000 }, (_, j) =>
        telemetryEvent(INSTALLATIONS[(i + j) % INSTALLATIONS.length] as number, i + j, Date.now()),
      ),
    );
  }
  await until('backlog consumed', 600_000, async () => {
    const p = await telemetryPosition();
    return p.committed >= start.end + BACKLOG;
  });
  const maxIngest = BACKLOG / ((Date.now() - t0) / 1000);

  // Maximum reads: 16 closed-loop callers for 10 s.
  let served = 0;
  const readOnce = async (i: number) => {
    const res = await fetch(
      `${apiBase}/getInstallationDevices?installationId=${INSTALLATIONS[i % INSTALLATIONS.length]}`,
      { headers: { 'api-key': key } },
    );
    await res.arrayBuffer();
    return res.status;
  };
  const closedUntil = Date.now() + 10_000;
  await Promise.all(
    Array.from({ length: 16 }, async (_, w) => {
      for (let i = w; Date.now() < closedUntil; i += 16) if ((await readOnce(i)) === 200) served++;
    }),
  );
  const maxReads = served / 10;
  const ingestRate = Math.round(maxIngest / 2);
  const readRate = Math.round(maxReads / 2);
  console.log(
    `measured: ingest max ${maxIngest.toFixed(0)} events/s, reads max ${maxReads.toFixed(0)} req/s; soak at ${ingestRate} events/s + ${readRate} req/s for ${MINUTES} min`,
  );

  // The soak.
  const load = startLoad(producer, topics.telemetry, INSTALLATIONS, ingestRate);
  let stop = false;
  let readErrors = 0;
  let reads = 0;
  const reader = (async () => {
    const interval = 1000 / readRate;
    let next = Date.now();
    let i = 0;
    const inFlight = new Set<Promise<void>>();
    while (!stop) {
      const p = readOnce(i++)
        .then((s) => {
          reads++;
          if (s !== 200) readErrors++;
        })
        .catch(() => {
          readErrors++;
        })
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
      next += interval;
      await sleep(Math.max(0, next - Date.now()));
    }
    await Promise.all(inFlight);
  })();
  const samples: Array<{ t: number; consumerMb: number; apiMb: number; lag: number }> = [];
  const began = Date.now();
  const end = began + MINUTES * 60_000;
  while (Date.now() < end) {
    const p = await telemetryPosition();
    samples.push({
      t: (Date.now() - began) / 1000,
      consumerMb: rssMb(consumer.pid),
      apiMb: rssMb(api.pid),
      // Read one after the other: the committed offset can pass the end read just before.
      lag: Math.max(0, p.end - p.committed),
    });
    const s = samples.at(-1);
    console.log(
      `t=${s?.t.toFixed(0)} s consumer ${s?.consumerMb.toFixed(1)} MB api ${s?.apiMb.toFixed(1)} MB lag ${s?.lag}`,
    );
    await sleep(SAMPLE_MS - ((Date.now() - began) % SAMPLE_MS));
  }
  stop = true;
  await Promise.all([reader, load.stop()]);

  // Figures: memory after warm-up (first 20 % or 2 min) vs the end; slope over the second half.
  const warm = samples.filter((s) => s.t >= Math.min(120, (MINUTES * 60) / 5));
  const half = samples.filter((s) => s.t >= (MINUTES * 60) / 2);
  const slope = (k: 'consumerMb' | 'apiMb') => {
    const n = half.length;
    const mt = half.reduce((a, s) => a + s.t, 0) / n;
    const mv = half.reduce((a, s) => a + s[k], 0) / n;
    const num = half.reduce((a, s) => a + (s.t - mt) * (s[k] - mv), 0);
    const den = half.reduce((a, s) => a + (s.t - mt) ** 2, 0);
    return (num / den) * 60; // MB per minute
  };
  const range = (k: 'consumerMb' | 'apiMb') =>
    `${Math.min(...warm.map((s) => s[k])).toFixed(0)}-${Math.max(...warm.map((s) => s[k])).toFixed(0)} MB`;
  const lagMax = Math.max(...samples.map((s) => s.lag));
  const summary = [
    `soak ${MINUTES} min: ${ingestRate} telemetry events/s (50 % of the measured ${maxIngest.toFixed(0)}) + ${readRate} getInstallationDevices/s (50 % of the measured ${maxReads.toFixed(0)}); ${load.produced()} events produced, ${reads} reads (${readErrors} not 200)`,
    `consumer RSS after warm-up ${range('consumerMb')}, slope over the second half ${slope('consumerMb').toFixed(2)} MB/min`,
    `API RSS after warm-up ${range('apiMb')}, slope over the second half ${slope('apiMb').toFixed(2)} MB/min`,
    `telemetry lag (sampled every 10 s): max ${lagMax}, last ${samples.at(-1)?.lag}`,
  ];
  for (const line of summary) console.log(line);

  const dataFile = join(ROOT, '.local', 'soak', 'samples.tsv');
  writeFileSync(
    dataFile,
    `t\tconsumer\tapi\tlag\n${samples.map((s) => `${s.t}\t${s.consumerMb}\t${s.apiMb}\t${s.lag}`).join('\n')}\n`,
  );
  writeFileSync(join(ROOT, '.local', 'soak', 'summary.txt'), `${summary.join('\n')}\n`);
  await plot(dataFile, join(ROOT, args.out));
  console.log(`plot: ${args.out}`);
} catch (error) {
  exitCode = 1;
  console.error(`soak failed: ${(error as Error).stack}`);
  for (const p of [consumer, api])
    for (const l of p.logs.slice(-10)) console.error(JSON.stringify(l).slice(0, 300));
} finally {
  for (const p of [consumer, api]) p.signal('SIGTERM');
  await Promise.all([consumer.exited, api.exited]);
  await producer.disconnect().catch(() => undefined);
  await stack.stop().catch((e) => console.error(String(e)));
}
process.exit(exitCode);

async function plot(data: string, png: string): Promise<void> {
  const ensure = await promisify(execFile)('bash', [
    join(ROOT, 'infra/ensure-package.sh'),
    'gnuplot',
    'gnuplot-nox',
  ]).catch((e) => e);
  if (ensure instanceof Error) throw new Error(`gnuplot is needed for the plot: ${ensure.message}`);
  const script = [
    `set terminal pngcairo size 1000,560 font 'sans,10'`,
    `set output '${png}'`,
    `set title 'Soak: memory (RSS) and consumer lag, sampled every 10 s'`,
    `set xlabel 'minutes'`,
    `set ylabel 'RSS (MB)'`,
    `set y2label 'telemetry lag (events)'`,
    `set ytics nomirror`,
    `set y2tics`,
    `set yrange [0:*]`,
    `set y2range [0:*]`,
    `set key top left`,
    `set grid`,
    `plot '${data}' using ($1/60):2 skip 1 with lines lw 2 title 'consumer RSS', '' using ($1/60):3 skip 1 with lines lw 2 title 'API RSS', '' using ($1/60):4 skip 1 axes x1y2 with lines lw 1 dt 2 title 'lag'`,
  ].join('\n');
  const child = execFile('gnuplot', [], (error) => {
    if (error) console.error(`gnuplot: ${error.message}`);
  });
  child.stdin?.end(script);
  await new Promise((r) => child.once('exit', r));
}
