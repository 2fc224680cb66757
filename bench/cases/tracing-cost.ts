import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { deviceMovesTopic } from '../../consumers/kafka/topics.js';
import { installation, newApiKey } from '../../test/support-api/fixtures.js';
import { BASE_PATH as BASE } from '../lib/context.js';
import { numberArg } from '../lib/options.js';
import { startChild, waitUntil } from '../lib/processes.js';
import { cannon, loadRunner, medianOf, pick, rpsList } from '../lib/side-by-side.js';
import {
  benchKafka,
  dropPrefix,
  KAFKA_BROKERS,
  type Message,
  produceAll,
  REDIS_URL,
} from '../lib/stack.js';
import { loadAverage, seedFlowModel, standalone, type Target } from '../lib/standalone.js';
import { median } from '../lib/stats.js';

// Issue 42: what tracing costs. Reads (getInstallationCurrentEnergyFlow, closed loop) and ingest
// (the consumer process draining pre-produced telemetry) with tracing off, on at 1 % and on at
// 100 % (parent-based trace-id ratio, exporting over OTLP/HTTP to a sink in this process that
// discards what it gets), sides alternating. With `--pre DIR`, a checkout of the commit before
// tracing (`git worktree add DIR <commit>` inside this repository, so its imports find these
// node_modules) runs beside them as the build without any tracing code.
//   npx tsx bench/cases/tracing-cost.ts [--seconds 6] [--alternations 3] [--events 200000]
//     [--rounds 2] [--pre .local/pre-tracing]

const LOAD = loadRunner({ connections: 64 });
const INSTALLATIONS = numberArg('installations', 1_000);
const EVENTS = numberArg('events', 200_000);
const ROUNDS = numberArg('rounds', 2);
const preAt = process.argv.indexOf('--pre');
const PRE = preAt > 0 ? (process.argv[preAt + 1] as string) : null;
if (PRE !== null && !existsSync(join(PRE, 'api/main.ts'))) throw new Error(`${PRE}: no checkout`);

const sink = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
});
await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
const endpoint = `http://127.0.0.1:${(sink.address() as { port: number }).port}`;
const traced = (ratio: string) => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
  OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
  OTEL_TRACES_SAMPLER_ARG: ratio,
});
/** Each side: its environment and the directory its sources come from. */
const sides: Record<string, { env: Record<string, string>; dir: string }> = {
  off: { env: {}, dir: '.' },
  on1: { env: traced('0.01'), dir: '.' },
  on100: { env: traced('1'), dir: '.' },
  ...(PRE ? { pre: { env: {}, dir: PRE } } : {}),
};
const names = Object.keys(sides);

const bench = standalone('tracing');
try {
  console.log(`load before ${loadAverage()}`);
  await reads();
  await ingest();
  console.log(`load after ${loadAverage()}`);
} finally {
  await bench.close();
  sink.close();
}

async function reads(): Promise<void> {
  const insts = Array.from({ length: INSTALLATIONS }, (_, i) => installation(7000 + i));
  const keys = [newApiKey(), newApiKey()];
  await seedFlowModel(bench.seed, insts, keys, {
    inverter: { powerAc: 1200 },
    battery: { soe: 55, powerDc: 300 },
    energyMeter: { powerAc: -400 },
  });
  const servers: Record<string, Target> = {};
  for (const [i, name] of names.entries()) {
    const side = sides[name] as (typeof sides)[string];
    servers[name] = await bench.api(18311 + i, side.env, join(side.dir, 'api/main.ts'));
  }
  const request = () => ({
    path: `${BASE}/getInstallationCurrentEnergyFlow?installationId=${pick(insts).id}`,
    headers: { 'api-key': pick(keys) },
  });
  // Warm up: JIT and the near-cache, every installation for every key.
  for (const server of Object.values(servers))
    await cannon(server.origin, request, { connections: 8, amount: 4 * INSTALLATIONS });
  const runs = await LOAD.alternate(
    Object.fromEntries(names.map((n) => [n, () => LOAD.run(servers[n] as Target, request)])),
  );
  const off = medianOf(runs.off ?? [], (r) => r.rps);
  for (const name of names) {
    const list = runs[name] ?? [];
    const rps = medianOf(list, (r) => r.rps);
    console.log(
      `reads ${name}: ${rps.toFixed(0)} req/s = ${(rps / off).toFixed(3)}x off; CPU/request ${medianOf(list, (r) => r.cpuUs).toFixed(0)} µs; p99 ${medianOf(list, (r) => r.p99)} ms [${rpsList(list)}]`,
    );
  }
}

/** Gateway-like telemetry: each installation reports a battery and a meter, keyed by it. */
function telemetry(count: number): Message[] {
  const now = Date.now();
  return Array.from({ length: count }, (_, i) => {
    const id = 9000 + (i % INSTALLATIONS);
    const battery = i % 2 === 0;
    return {
      key: String(id),
      value: JSON.stringify({
        type: 'device.state',
        installationId: id,
        category: battery ? 'battery' : 'energyMeter',
        deviceId: id * 10 + (battery ? 1 : 2),
        observedAt: new Date(now - 60_000 + Math.floor(i / INSTALLATIONS)).toISOString(),
        state: battery
          ? { soe: i % 100, powerDc: 300, ratedEnergy: 5000 }
          : { powerAc: i % 500, options: '' },
      }),
    };
  });
}

async function ingest(): Promise<void> {
  const run = `tracing-${Date.now().toString(36)}`;
  const messages = telemetry(EVENTS);
  const rates: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 0; round < ROUNDS; round++) {
    // Each round in another order, so no side always goes first.
    const order = names.map((_, i) => names[(i + round) % names.length] as string);
    for (const name of order)
      rates[name]?.push(await drain(messages, `${run}-${name}-${round}`, name));
  }
  const off = median(rates.off ?? []);
  for (const name of names) {
    const r = median(rates[name] ?? []);
    console.log(
      `ingest ${name}: ${r.toFixed(0)} events/s = ${(r / off).toFixed(3)}x off [${(rates[name] ?? []).map((x) => x.toFixed(0)).join(', ')}]`,
    );
  }
}

/** The consumer process of `side` draining a fresh topic of `messages`: events per second. */
async function drain(messages: Message[], id: string, name: string): Promise<number> {
  const side = sides[name] as (typeof sides)[string];
  // A client per drain: kafkajs' admin keeps asking for the metadata of topics deleted since.
  const kafka = await benchKafka(id);
  const topic = `bench-${id}-telemetry`;
  const prefix = `bench:${id}:`;
  const group = `bench-${id}`;
  // The process creates the others itself (quiet: nothing is produced to them).
  const quiet = ['installations', 'access', 'deadletter'].map((t) => `bench-${id}-${t}`);
  const created = [...quiet, deviceMovesTopic(group)];
  await kafka.createTopic(topic, 6);
  await produceAll(kafka.producer, topic, messages);
  // A new topic's metadata may lag on the admin's connection: ask until it answers.
  let end = 0;
  await waitUntil(
    `${topic} offsets`,
    async () => {
      end = await kafka.endOffset(topic);
      return end > 0;
    },
    30_000,
  );
  const spawned = Date.now();
  const child = startChild({
    name: `consumers-${name}`,
    script: join(side.dir, 'consumers/main.ts'),
    env: {
      ...side.env,
      REDIS_URL,
      KAFKA_BROKERS,
      REDIS_KEY_PREFIX: prefix,
      TOPIC_TELEMETRY: topic,
      TOPIC_INSTALLATIONS: quiet[0] as string,
      TOPIC_ACCESS: quiet[1] as string,
      TOPIC_DEADLETTER: quiet[2] as string,
      CONSUMER_GROUP: group,
      CONSUMER_HEALTH_PORT: '0',
      ONLINE_WINDOW_SECONDS: '3600',
      LOG_LEVEL: 'warn',
    },
  });
  try {
    // Over the active span: from the first commit seen to the last, so start-up is not counted.
    let first = null as { at: number; committed: number } | null;
    let last = { at: 0, committed: 0 };
    await waitUntil(
      `${name} drains ${topic}`,
      async () => {
        const committed = await kafka.committed(`${group}.telemetry`, topic);
        if (committed > 0 && first === null) first = { at: Date.now(), committed };
        if (committed > last.committed) last = { at: Date.now(), committed };
        return committed >= end;
      },
      600_000,
      child,
      50,
    );
    // All of it in the first commit seen (too few events): from the spawn, start-up included.
    const from = first !== null && first.at < last.at ? first : { at: spawned, committed: 0 };
    return (last.committed - from.committed) / ((last.at - from.at) / 1000);
  } finally {
    await child.stop();
    await kafka.deleteTopics([topic, ...created]);
    await kafka.close();
    await dropPrefix(bench.redis, prefix);
  }
}
