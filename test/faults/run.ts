import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs, promisify } from 'node:util';
import { Redis } from 'ioredis';
import kafkajs, { type Producer } from 'kafkajs';

const { CompressionTypes } = kafkajs;

import { createKafkajsClient } from '../../consumers/kafka/kafkajs-client.js';
import { dropNegativeTimeoutWarning } from '../../consumers/kafka/negative-timeout.js';
import { groupIdOf, TOPIC_ROLES } from '../../src/consumer-groups.js';
import { createLogger } from '../../src/logger.js';
import { newApiKey } from '../../tools/seed/records.js';
import {
  apiKeyCreated,
  apiKeyRevoked,
  applicationUpserted,
  grant,
  type Keyed,
} from '../e2e/support/events.js';
import { brokerOf, coordinatorPartition, underReplicated } from './brokers.js';
import { clusterFaultStack, faultStack, ROOT } from './fault-stack.js';
import {
  connectedProducer,
  kafkaFor,
  type Load,
  seedFleet,
  send,
  startLoad,
  telemetryEvent,
} from './load.js';
import { compareApi, compareModel, deadLetters, foldTelemetry } from './oracle.js';
import { type ServiceProcess, startService } from './processes.js';

// The fault-injection suite (docs/reliability.md): real consumer and API processes on a Kafka
// and Redis of the suite's own, telemetry at a steady rate, one fault per scenario, then the
// whole read model and the API compared with a fold of the topic as Kafka holds it.
//   npm run test:faults [-- --profile short|full] [--only a,b] [--kafka single|cluster]
// `--kafka cluster` runs the broker scenarios (i)-(k) on three replicated brokers instead.
// Exits 1 when any scenario lost an acknowledged event, has a mismatch, a record moved
// backwards, an undocumented API answer, a consumer process that exited by itself, or did not
// catch up (within 15 s of the last broker being back, for the broker scenarios).

const { values: args } = parseArgs({
  options: {
    profile: { type: 'string', default: 'full' },
    only: { type: 'string' },
    kafka: { type: 'string', default: 'single' },
  },
});
const SHORT = args.profile === 'short';
const CLUSTER = args.kafka === 'cluster';
if (!CLUSTER && args.kafka !== 'single') throw new Error('--kafka is single or cluster');
const RATE = SHORT ? 300 : 600; // telemetry events per second
const INSTALLATIONS = Array.from({ length: SHORT ? 100 : 200 }, (_, i) => i + 1);
const LOAD_BEFORE_MS = SHORT ? 3_000 : 6_000;
const LOAD_AFTER_MS = SHORT ? 3_000 : 6_000;
const CATCH_UP_DEADLINE_MS = 90_000;
const API_TIMEOUT_MS = 5_000; // API_REQUEST_TIMEOUT_MS default
/** The bound: ingest caught up this soon after the last broker is back. */
const BACK_TO_CAUGHT_UP_MS = 15_000;
const ONLINE_WINDOW_SECONDS = 300;
/** The bound: the API ready again this soon after the consumer started a rebuild. */
const BUILD_TO_READY_MS = 30_000;

const run = `f${Date.now().toString(36)}`;
const stack = CLUSTER ? clusterFaultStack() : faultStack();
const brokers = stack.kafkaBrokers.split(',');
dropNegativeTimeoutWarning();
const topics = {
  installations: `${run}.installations`,
  telemetry: `${run}.telemetry`,
  access: `${run}.access`,
  deadletter: `${run}.deadletter`,
};
const prefix = `${run}:`;
const group = `${run}-projector`;
const groups = { consumer: { groupId: group } };
const apiPort = 19610;
const apiBase = `http://127.0.0.1:${apiPort}/application/v1`;
const env = (healthPort: number) => ({
  KAFKA_BROKERS: stack.kafkaBrokers,
  REDIS_URL: stack.redisUrl,
  REDIS_KEY_PREFIX: prefix,
  TOPIC_INSTALLATIONS: topics.installations,
  TOPIC_TELEMETRY: topics.telemetry,
  TOPIC_ACCESS: topics.access,
  TOPIC_DEADLETTER: topics.deadletter,
  CONSUMER_GROUP: group,
  CONSUMER_HEALTH_PORT: String(healthPort),
  CONSUMER_LAG_INTERVAL_MS: '1000',
  CONSUMER_FATAL_EXIT_GRACE_MS: '1000',
  API_PORT: String(apiPort),
  ONLINE_WINDOW_SECONDS: String(ONLINE_WINDOW_SECONDS),
});

interface Row {
  scenario: string;
  produced: number;
  /** Acknowledged by Kafka but not in the topic afterwards. */
  lost: number;
  inModel: number;
  mismatches: number;
  backwards: number;
  caughtUpS: number | null;
  /** From the last broker being back to caught up (broker scenarios). */
  backToCaughtUpS: number | null;
  consumerReadyz: string;
  api: string;
  notes: string;
  ok: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(200);
  }
}
const status = async (url: string, headers: Record<string, string> = {}) => {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(2_000) });
  await res.arrayBuffer();
  return res.status;
};

// ---- the system under test ---------------------------------------------------------------

let consumer!: ServiceProcess;
let api!: ServiceProcess;
let redis!: Redis;
let producer!: Producer;
const admin = async () => {
  const client = createKafkajsClient({
    brokers,
    clientId: 'fault-admin',
    logger: createLogger({ level: 'silent', name: 'faults' }),
  });
  return client.createAdmin();
};

const startConsumer = (port = 19601) =>
  startService(`consumer:${port}`, 'consumers/main.ts', env(port));
const ready = (port: number) => status(`http://127.0.0.1:${port}/readyz`).then((s) => s === 200);

/** Sum over the three groups of end offset - committed offset, read from the broker. */
async function lag(): Promise<{ total: bigint; telemetryCommitted: bigint }> {
  const a = await admin();
  try {
    let total = 0n;
    let telemetryCommitted = 0n;
    for (const role of TOPIC_ROLES) {
      const topic = topics[role];
      const [ends, committed] = await Promise.all([
        a.endOffsets(topic),
        a.committedOffsets(groupIdOf(groups, role), topic),
      ]);
      for (const e of ends) {
        const c = BigInt(committed.find((x) => x.partition === e.partition)?.offset ?? e.start);
        total += BigInt(e.end) - c;
        if (role === 'telemetry') telemetryCommitted += c;
      }
    }
    return { total, telemetryCommitted };
  } finally {
    await a.disconnect();
  }
}

/** Seconds from `since` until the consumers are within half a second of production. */
async function caughtUp(since: number, load: Load | null): Promise<number> {
  await until('caught up', CATCH_UP_DEADLINE_MS, async () => {
    const { total } = await lag();
    const slack = load ? BigInt(Math.ceil(RATE / 2)) : 0n;
    return total <= slack ? true : undefined;
  });
  return (Date.now() - since) / 1000;
}

// ---- what is watched during a fault -------------------------------------------------------

/** lastSeenDate of every device in the model never decreases between samples. */
function watchBackwards() {
  const seen = new Map<string, string>();
  let backwards = 0;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      for (const inst of INSTALLATIONS.filter((i) => i % 4 === 0)) {
        const devices = await redis.hgetall(`${prefix}{i${inst}}:devs`).catch(() => null);
        for (const [field, json] of Object.entries(devices ?? {})) {
          const last = (JSON.parse(json) as { lastSeenDate: string }).lastSeenDate;
          const before = seen.get(`${inst}|${field}`);
          if (before && last < before) backwards++;
          seen.set(`${inst}|${field}`, last);
        }
      }
      await sleep(500);
    }
  })();
  return {
    reset: () => seen.clear(),
    async stop() {
      stopped = true;
      await loop;
      return backwards;
    },
  };
}

/** How long, in total, the consumer's /readyz said 503 (or did not answer) during the fault. */
function watchConsumerReadiness() {
  let notReadyMs = 0;
  let last = Date.now();
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const isReady = await ready(19601).catch(() => false);
      const now = Date.now();
      if (!isReady) notReadyMs += now - last;
      last = now;
      await sleep(250);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return notReadyMs;
    },
  };
}

/** The API's answers during the fault: only 200 or the documented 500 envelopes, no hang. */
function probeApi(key: string) {
  const answers = new Map<string, number>();
  let bad = 0;
  let stopped = false;
  let apiReady = true;
  const readiness = setInterval(() => {
    status(`http://127.0.0.1:${apiPort}/readyz`)
      .then((s) => {
        apiReady = s === 200;
      })
      .catch(() => {
        apiReady = false;
      });
  }, 250);
  const note = (a: string, ok: boolean) => {
    answers.set(a, (answers.get(a) ?? 0) + 1);
    if (!ok) bad++;
  };
  const one = async (i: number) => {
    const inst = INSTALLATIONS[i % INSTALLATIONS.length];
    // An answer given while /readyz says 503 would not reach a client behind a load balancer;
    // readiness is asked again right before, so only answers it would have let through count.
    const readyNow = await status(`http://127.0.0.1:${apiPort}/readyz`).catch(() => 0);
    const unready = apiReady && readyNow === 200 ? '' : ' while /readyz 503';
    const started = Date.now();
    try {
      const res = await fetch(`${apiBase}/getInstallationDevices?installationId=${inst}`, {
        headers: { 'api-key': key },
        signal: AbortSignal.timeout(API_TIMEOUT_MS + 1_000),
      });
      const body = (await res.json()) as { valid?: boolean; error?: string };
      if (res.status === 200) return note(`200${unready}`, true);
      // A request already past the readiness check when Redis was wiped: the next check sees it.
      // It reads the emptied model: 401 where the key's status is read from Redis, 404 where it
      // is judged from memory (kept statuses) and the installation is gone.
      const wiped = res.status === 401 || (res.status === 404 && body.error === 'DOESNT_EXIST');
      if (wiped && unready === '' && started - wipedAt < READINESS_WINDOW_MS) {
        return note(`${res.status} in the same second as the wipe`, true);
      }
      const retryAfter = res.headers.get('retry-after') ? '+Retry-After' : '';
      const ok =
        unready !== '' ||
        (res.status === 500 && body.valid === false && body.error === 'INTERNAL_ERROR');
      note(`${res.status} ${body.error ?? '?'}${retryAfter}${unready}`, ok);
    } catch (error) {
      const hang = Date.now() - started >= API_TIMEOUT_MS;
      note(hang ? 'hang' : `error ${(error as Error).name}`, false);
    }
  };
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      await Promise.all([one(i), sleep(100)]);
    }
  })();
  return {
    async stop() {
      stopped = true;
      clearInterval(readiness);
      await loop;
      const text = [...answers].map(([a, n]) => `${n}×${a}`).join(', ');
      return { text, bad };
    },
  };
}

// ---- a scenario ---------------------------------------------------------------------------

const rows: Row[] = [];
/** When scenario (e) wiped Redis; a load balancer polls readiness, not every request. */
let wipedAt = Number.NEGATIVE_INFINITY;
const READINESS_WINDOW_MS = 1_000;
let producedTotal = 0;

async function scenario(
  name: string,
  fault: (ctx: {
    load: Load;
    t0: () => number;
    backwards: ReturnType<typeof watchBackwards>;
    /** Marks the moment the last broker is back: caught up is then also timed from it. */
    back: () => void;
  }) => Promise<string>,
): Promise<void> {
  console.log(`\n--- ${name}`);
  const backwards = watchBackwards();
  const probe = probeApi(keys.reader);
  const readiness = watchConsumerReadiness();
  const consumerBefore = consumer;
  let backAt: number | null = null;
  const load = startLoad(producer, topics.telemetry, INSTALLATIONS, RATE);
  let t0 = 0;
  let notes = '';
  let caught: number | null = null;
  let error: unknown = null;
  try {
    await sleep(LOAD_BEFORE_MS);
    t0 = Date.now();
    notes = await fault({
      load,
      t0: () => t0,
      backwards,
      back: () => {
        backAt = Date.now();
      },
    });
    caught = await caughtUp(t0, load);
    await sleep(LOAD_AFTER_MS);
  } catch (e) {
    error = e;
    notes += ` FAILED: ${(e as Error).message}`;
    console.error(
      `--- last log lines of ${consumer.name} (${consumer.alive() ? 'running' : 'exited'})`,
    );
    for (const l of consumer.logs.slice(-20)) console.error(JSON.stringify(l).slice(0, 500));
  }
  await load.stop();
  producedTotal += load.produced();
  const apiSeen = await probe.stop();
  const notReadyMs = await readiness.stop();
  // A consumer that exited on its own (not one the fault replaced) is what the issue forbids.
  const exited = consumer === consumerBefore && !consumer.alive();
  if (exited) notes += ' FAILED: the consumer process exited';
  const backToCaught = backAt === null || caught === null ? null : t0 + caught * 1000 - backAt;
  if (backToCaught !== null && backToCaught > BACK_TO_CAUGHT_UP_MS)
    notes += ` FAILED: caught up ${(backToCaught / 1000).toFixed(1)} s after the last broker was back`;
  let mismatches = -1;
  let lost = -1;
  let inModel = 0;
  try {
    await until('fully caught up', CATCH_UP_DEADLINE_MS, async () =>
      (await lag()).total === 0n ? true : undefined,
    );
    inModel = Number((await lag()).telemetryCommitted);
    const fold = await foldTelemetry(stack.kafkaBrokers, topics.telemetry);
    lost = Math.max(0, producedTotal - fold.events);
    const model = await compareModel(redis, prefix, fold, INSTALLATIONS, ONLINE_WINDOW_SECONDS);
    const served = await compareApi(apiBase, keys.reader, fold, INSTALLATIONS);
    mismatches = model.mismatches + served.mismatches;
    for (const e of [...model.examples, ...served.examples]) console.log(`  mismatch: ${e}`);
    inModel = Math.min(inModel, fold.events);
  } catch (e) {
    error ??= e;
    notes += ` FAILED: ${(e as Error).message}`;
  }
  const moved = await backwards.stop();
  const row: Row = {
    scenario: name,
    produced: producedTotal,
    lost,
    inModel,
    mismatches,
    backwards: moved,
    caughtUpS: caught,
    backToCaughtUpS: backToCaught === null ? null : backToCaught / 1000,
    consumerReadyz: `503 for ${(notReadyMs / 1000).toFixed(1)} s`,
    api: apiSeen.text || '-',
    notes: notes.trim(),
    ok:
      !error &&
      !exited &&
      lost === 0 &&
      mismatches === 0 &&
      moved === 0 &&
      apiSeen.bad === 0 &&
      caught !== null &&
      (backToCaught === null || backToCaught <= BACK_TO_CAUGHT_UP_MS),
  };
  rows.push(row);
  console.log(JSON.stringify(row));
}

// ---- setup ----------------------------------------------------------------------------------

const keys = { reader: newApiKey(), revoked: newApiKey() };

async function setup(): Promise<void> {
  console.log(
    `fault suite ${run}: profile ${SHORT ? 'short' : 'full'}, ${RATE} events/s, ${INSTALLATIONS.length} installations, ${stack.brokerCount} broker(s) at ${stack.kafkaBrokers}`,
  );
  await stack.start();
  redis = new Redis(stack.redisUrl, { maxRetriesPerRequest: 1, lazyConnect: false });
  redis.on('error', () => undefined);
  producer = await connectedProducer(kafkaFor(stack.kafkaBrokers));
  consumer = startConsumer();
  await until('consumer ready', 60_000, () => ready(19601));
  api = startService('api', 'api/main.ts', env(0));
  await until('api up', 60_000, () =>
    status(`http://127.0.0.1:${apiPort}/healthz`).then((s) => s === 200),
  );
  // Every device exists before the faults: the fold then has nothing to reject but poison.
  producedTotal += await seedFleet(producer, topics, INSTALLATIONS, [
    applicationUpserted(1, { type: 'user', id: 9 }),
    apiKeyCreated('reader', 1, keys.reader),
    applicationUpserted(2, { type: 'user', id: 9 }),
    apiKeyCreated('revoked', 2, keys.revoked),
    grant(true, 2, 1),
  ]);
  await until('seeded', 60_000, async () =>
    (await status(`${apiBase}/getInstallationDevices?installationId=${INSTALLATIONS.at(-1)}`, {
      'api-key': keys.reader,
    })) === 200 && (await lag()).total === 0n
      ? true
      : undefined,
  );
}

// ---- the scenarios (a)-(n) ------------------------------------------------------------------

const exec = promisify(execFile);
const consumerExit = async (p: ServiceProcess, ms: number) =>
  Promise.race([p.exited, sleep(ms).then(() => 'still running')]);

const SCENARIOS: Record<string, [string, Parameters<typeof scenario>[1]]> = {
  f: [
    '(f) poison and oversized messages in every codec',
    async () => {
      const codecs = [
        ['none', CompressionTypes.None],
        ['gzip', CompressionTypes.GZIP],
        ['snappy', CompressionTypes.Snappy],
        ['lz4', CompressionTypes.LZ4],
      ] as const;
      let poison = 0;
      for (const [, codec] of codecs) {
        const batch = [
          telemetryEvent(1, 0, Date.now()),
          { key: '1', event: { type: 'device.state', installationId: 1 } },
          telemetryEvent(2, 1, Date.now()),
          { key: '2', event: { type: 'nope' } },
          telemetryEvent(3, 2, Date.now()),
        ] as Keyed[];
        await send(producer, topics.telemetry, batch, codec);
        // Not JSON at all, in the same codec.
        await sendRaw({
          topic: topics.telemetry,
          compression: codec,
          messages: [{ key: '3', value: '{not json' }],
        });
        poison += 3;
      }
      // Oversized: valid JSON of ~950 KiB, a schema violation whose dead letter cannot carry it.
      await sendRaw({
        topic: topics.telemetry,
        compression: CompressionTypes.None,
        messages: [
          {
            key: '4',
            value: JSON.stringify({
              type: 'device.state',
              installationId: 4,
              pad: 'x'.repeat(950 * 1024),
            }),
          },
        ],
      });
      poison += 1;
      // Per codec 3 valid + 2 poison in one batch and 1 not-JSON alone; then the oversized one.
      producedTotal += codecs.length * 6 + 1;
      const t = Date.now();
      await caughtUp(t, null).catch(() => undefined);
      const fold = await foldTelemetry(stack.kafkaBrokers, topics.telemetry);
      const dls = await until('dead letters', 30_000, async () => {
        const d = await deadLetters(stack.kafkaBrokers, topics.deadletter, topics.telemetry);
        return d.size >= fold.rejects.size ? d : undefined;
      });
      let missing = 0;
      let wrongReason = 0;
      let duplicates = 0;
      for (const [at, reason] of fold.rejects) {
        const got = dls.get(at);
        if (!got) missing++;
        else {
          if (got.length > 1) duplicates++;
          // too_large keeps the original reason in its detail only.
          if (got[0] !== reason && got[0] !== 'too_large') wrongReason++;
        }
      }
      if (missing + wrongReason > 0)
        throw new Error(`dead letters: ${missing} missing, ${wrongReason} wrong reason`);
      const reasons = [...new Set([...dls.values()].flat())].sort().join(', ');
      return `${poison - 1} poison in none/gzip/snappy/lz4 + 1 oversized: all dead-lettered (${reasons}), ${duplicates} twice; zstd is decoded (codec tests) but kafkajs cannot produce it`;
    },
  ],
  a: [
    '(a) consumer SIGKILL mid-batch, restarted',
    async ({ t0 }) => {
      consumer.signal('SIGKILL');
      await consumer.exited;
      consumer = startConsumer();
      await until('consumer ready', 60_000, () => ready(19601));
      return `restarted at once; ready (member of its groups again) ${((Date.now() - t0()) / 1000).toFixed(1)} s after the kill`;
    },
  ],
  g: [
    '(g) SIGTERM mid-stream',
    async ({ t0 }) => {
      const before = consumer;
      before.signal('SIGTERM');
      const exit = await consumerExit(before, 35_000);
      const stoppedIn = ((Date.now() - t0()) / 1000).toFixed(1);
      const finished = before.logs.some((l) => l.msg === 'consumers stopped');
      const abandoned = before.logs.filter((l) =>
        /abandon|revoked while retrying/.test(String(l.msg ?? l.err)),
      ).length;
      consumer = startConsumer();
      await until('consumer ready', 60_000, () => ready(19601));
      if (exit !== '0' || !finished)
        throw new Error(`SIGTERM: exit ${exit}, clean stop logged: ${finished}`);
      return `exit 0 after ${stoppedIn} s, batch in hand finished and committed (${abandoned} abandoned), restarted`;
    },
  ],
  d: [
    '(d) rebalance: a second consumer joins under load, then leaves',
    async () => {
      const second = startConsumer(19602);
      await until('second consumer ready', 60_000, () => ready(19602));
      await sleep(LOAD_BEFORE_MS);
      second.signal('SIGTERM');
      const exit = await consumerExit(second, 35_000);
      if (exit !== '0') throw new Error(`second consumer exit ${exit}`);
      return 'joined, shared the partitions, left with exit 0';
    },
  ],
  b: [
    '(b) Redis SIGKILL, restarted from its AOF',
    async () => {
      stack.kill9('redis');
      const peak = await watchLagMetric(8_000);
      const notReady = !(await ready(19601).catch(() => false));
      const apiReady = await status(`http://127.0.0.1:${apiPort}/readyz`).catch(() => 0);
      await stack.start('redis');
      await until('consumer ready', 60_000, () => ready(19601));
      await until(
        'api ready',
        30_000,
        async () => (await status(`http://127.0.0.1:${apiPort}/readyz`)) === 200 || undefined,
      );
      return `8 s down; consumer /readyz 503: ${notReady}, API /readyz ${apiReady}; telemetry ingest_consumer_lag peak ${peak.lag}, ingest_newest_event_age_seconds peak ${peak.age.toFixed(1)} s while down`;
    },
  ],
  h: [
    '(h) a revocation queued behind a Redis outage',
    async () => {
      const probe = () =>
        status(`${apiBase}/getInstallationDevices?installationId=1`, { 'api-key': keys.revoked });
      if ((await probe()) !== 200)
        throw new Error('the key to revoke does not read before the fault');
      stack.kill9('redis');
      await send(producer, topics.access, [apiKeyRevoked('revoked')]);
      await sleep(3_000);
      await stack.start('redis');
      const back = Date.now();
      await until(
        'redis answers',
        30_000,
        async () => (await redis.ping()) === 'PONG' || undefined,
      );
      await until('revocation applied', 30_000, async () =>
        (await probe()) === 401 ? true : undefined,
      );
      const took = (Date.now() - back) / 1000;
      return `revoked while Redis was down; 401 ${took.toFixed(1)} s after Redis was back (consumer backoff up to CONSUMER_MAX_RETRY_DELAY_MS)`;
    },
  ],
  c: [
    '(c) Kafka SIGKILL and restart',
    async ({ back }) => {
      stack.kill9('kafka');
      await sleep(3_000);
      const notReady = !(await ready(19601).catch(() => false));
      await stack.start('kafka');
      back();
      await until('consumer ready', 120_000, () => ready(19601));
      return `consumer /readyz 503 while Kafka was down: ${notReady}; the same consumer process rejoined`;
    },
  ],
  i: [
    '(i) three brokers: one broker kill -9 under load, restarted',
    async ({ back }) => {
      stack.kill9Broker(2);
      await sleep(5_000);
      const readyWhileDown = await ready(19601).catch(() => false);
      await stack.start('kafka');
      back();
      const synced = await inSync();
      return `broker 2 down 5 s (consumer /readyz while down: ${readyWhileDown ? 200 : 503}); back in sync ${synced}`;
    },
  ],
  j: [
    '(j) three brokers: rolling restart, one after the other',
    async ({ back }) => {
      const steps: string[] = [];
      for (const n of [1, 2, 3]) {
        const started = Date.now();
        await stack.stopBroker(n);
        await stack.start('kafka');
        if (n === 3) back();
        const synced = await inSync();
        steps.push(`broker ${n}: ${((Date.now() - started) / 1000).toFixed(1)} s (${synced})`);
      }
      return `SIGTERM, restart, wait for 0 under-replicated partitions: ${steps.join('; ')}`;
    },
  ],
  k: [
    "(k) three brokers: the telemetry group coordinator's broker kill -9",
    async ({ back }) => {
      const at = coordinatorPartition(groupIdOf(groups, 'telemetry'));
      const coordinator = await brokerOf(brokers, at.topic, at.partition);
      stack.kill9Broker(coordinator);
      const killed = Date.now();
      // The controller fences a dead broker after broker.session.timeout.ms (9 s): only then
      // does the coordinator move, which is the point of this scenario.
      const moved = await until('the coordinator moved', 60_000, async () => {
        const now = await brokerOf(brokers, at.topic, at.partition);
        return now !== coordinator ? now : undefined;
      });
      const movedS = ((Date.now() - killed) / 1000).toFixed(1);
      await stack.start('kafka');
      back();
      const synced = await inSync();
      return `coordinator broker ${coordinator} killed; coordinator on broker ${moved} ${movedS} s later; restarted, back in sync ${synced}`;
    },
  ],
  e: [
    '(e) read model lost (FLUSHALL), detected, rebuilt from the earliest offset',
    async ({ backwards }) => {
      consumer.signal('SIGTERM');
      await consumer.exited;
      await redis.flushall();
      wipedAt = Date.now();
      backwards.reset();
      const before = (await deadLetters(stack.kafkaBrokers, topics.deadletter, topics.telemetry))
        .size;
      consumer = startConsumer();
      const exit = await consumerExit(consumer, 30_000);
      const named = consumer.logs.some((l) => String(l.msg).includes('tools/rebuild.ts'));
      const apiReady = await status(`http://127.0.0.1:${apiPort}/readyz`);
      const after = (await deadLetters(stack.kafkaBrokers, topics.deadletter, topics.telemetry))
        .size;
      if (exit !== '1' || !named || apiReady !== 503 || after !== before) {
        throw new Error(
          `wipe: consumer exit ${exit}, command named ${named}, API readyz ${apiReady}, new dead letters ${after - before}`,
        );
      }
      const rebuildStarted = Date.now();
      const { stdout: out } = await exec(
        process.execPath,
        ['--import', 'tsx', 'tools/rebuild.ts', '--execute', '--yes'],
        {
          cwd: ROOT,
          env: { ...process.env, ...env(0), LOG_LEVEL: 'warn' },
        },
      );
      const rebuildS = (Date.now() - rebuildStarted) / 1000;
      const stdout = out.split('\n').find((l) => l.startsWith('read model emptied')) ?? '';
      consumer = startConsumer();
      const started = Date.now();
      await until('consumer ready', 60_000, () => ready(19601));
      const readyS = (Date.now() - started) / 1000;
      // Production goes on meanwhile: ready once the ends of the build start are reached.
      await until('API ready (model rebuilt)', BUILD_TO_READY_MS, async () =>
        (await status(`http://127.0.0.1:${apiPort}/readyz`)) === 200 ? true : undefined,
      );
      const builtS = (Date.now() - started) / 1000;
      return `consumer refused (exit 1, named the command), API /readyz 503, 0 new dead letters; rebuild command ${rebuildS.toFixed(1)} s (${stdout.split(':')[0]}), consumer ready ${readyS.toFixed(1)} s later, API /readyz 200 again after ${builtS.toFixed(1)} s`;
    },
  ],
  l: [
    '(l) Redis pauses writes for 10 s (CLIENT PAUSE WRITE, what FAILOVER does)',
    async () => {
      const pauseMs = 10_000;
      await redis.call('CLIENT', 'PAUSE', String(pauseMs), 'WRITE');
      const ends = Date.now() + pauseMs - 500;
      // Flow reads back to back through the pause: each must be answered 200.
      const answers = new Map<number, number>();
      let slowestMs = 0;
      for (let i = 0; Date.now() < ends; i++) {
        const inst = INSTALLATIONS[i % INSTALLATIONS.length];
        const started = Date.now();
        const code = await status(
          `${apiBase}/getInstallationCurrentEnergyFlow?installationId=${inst}`,
          { 'api-key': keys.reader },
        ).catch(() => 0);
        slowestMs = Math.max(slowestMs, Date.now() - started);
        answers.set(code, (answers.get(code) ?? 0) + 1);
      }
      const text = [...answers].map(([code, n]) => `${n}×${code}`).join(', ');
      if ([...answers.keys()].some((code) => code !== 200))
        throw new Error(`flow reads during the write pause: ${text}`);
      return `flow reads during the pause: ${text}, slowest ${slowestMs} ms; consumer writes waited and resumed`;
    },
  ],
  m: [
    '(m) partitions added to the telemetry topic under load, two consumers',
    async () => {
      const second = startConsumer(19602);
      const kafkaAdmin = kafkaFor(stack.kafkaBrokers).admin();
      await kafkaAdmin.connect();
      try {
        await until('second consumer ready', 60_000, () => ready(19602));
        const topic = topics.telemetry;
        const meta = await kafkaAdmin.fetchTopicMetadata({ topics: [topic] });
        const before = meta.topics[0]?.partitions.length ?? 0;
        await kafkaAdmin.createPartitions({ topicPartitions: [{ topic, count: before * 2 }] });
        const added = Date.now();
        // A producer connected now knows the new partitions, as producers refreshing their
        // metadata do: a round of every installation, some of it on the new ones.
        const fresh = await connectedProducer(kafkaFor(stack.kafkaBrokers));
        const round = INSTALLATIONS.map((id, i) => telemetryEvent(id, i, Date.now()));
        await send(fresh, topic, round);
        producedTotal += round.length;
        await fresh.disconnect();
        const [ends, committed] = await until('new partitions consumed', 60_000, async () => {
          const e = await kafkaAdmin.fetchTopicOffsets(topic);
          const [c] = await kafkaAdmin.fetchOffsets({
            groupId: groupIdOf(groups, 'telemetry'),
            topics: [topic],
          });
          const fresh = e.filter((p) => p.partition >= before && BigInt(p.high) > 0n);
          const done = fresh.every((p) => {
            const at = c?.partitions.find((x) => x.partition === p.partition)?.offset ?? '-1';
            return BigInt(at) >= BigInt(p.high);
          });
          return fresh.length > 0 && done ? ([e, c] as const) : undefined;
        });
        const tookS = (Date.now() - added) / 1000;
        const used = ends.filter((p) => p.partition >= before && BigInt(p.high) > 0n).length;
        const metrics = await fetch('http://127.0.0.1:19601/metrics').then((r) => r.text());
        const lagSeries = metrics
          .split('\n')
          .filter((l) => l.startsWith(`ingest_topic_lag{topic="${topic}"`)).length;
        if (tookS > 10 || lagSeries !== before * 2) {
          throw new Error(
            `new partitions consumed after ${tookS.toFixed(1)} s (bound 10 s); ingest_topic_lag series ${lagSeries} of ${before * 2}`,
          );
        }
        const groupCommitted = committed?.partitions.length ?? 0;
        return `${before} -> ${before * 2} partitions; the ${used} new ones written to were consumed ${tookS.toFixed(1)} s after they were added; ingest_topic_lag covers all ${lagSeries} (group committed on ${groupCommitted})`;
      } finally {
        await kafkaAdmin.disconnect();
        second.signal('SIGTERM');
        await second.exited;
      }
    },
  ],
  n: [
    '(n) dead letters replayed with the dead-letter tool while the load runs',
    async () => {
      const dead = () => deadLetters(stack.kafkaBrokers, topics.deadletter, topics.telemetry);
      const before = (await dead()).size;
      await sendRaw({
        topic: topics.telemetry,
        compression: CompressionTypes.None,
        messages: [
          { key: '1', value: '{not json' },
          { key: '2', value: JSON.stringify({ type: 'nope' }) },
        ],
      });
      await until('the poison dead-lettered', 30_000, async () =>
        (await dead()).size >= before + 2 ? true : undefined,
      );
      const beforeReplay = (await dead()).size;
      // Every dead letter of the telemetry topic not replayed yet, sent back for real.
      const { stdout } = await exec(
        process.execPath,
        [
          '--import',
          'tsx',
          'tools/dead-letters.ts',
          'replay',
          '--topic',
          topics.telemetry,
          '--not-replayed',
          '--execute',
          '--yes',
          '--operator',
          'fault-suite',
        ],
        { cwd: ROOT, env: { ...process.env, ...env(0), LOG_LEVEL: 'warn' } },
      );
      const summary = stdout.split('\n').find((l) => l.startsWith('run ')) ?? '';
      const sent = Number(/: (\d+) sent/.exec(summary)?.[1] ?? Number.NaN);
      if (!(sent >= 2)) throw new Error(`replay sent ${sent}: ${summary}`);
      // Still refused, each comes back once, as a dead letter of its replay (a new source offset).
      await until('the replays dead-lettered again', 30_000, async () =>
        (await dead()).size >= beforeReplay + sent ? true : undefined,
      );
      return `${sent} dead letters replayed under load (${summary.replace(/^run \S+: /, '')}), each dead-lettered again once`;
    },
  ],
};

/** Waits until no partition is under-replicated; says how long after it was asked. */
async function inSync(): Promise<string> {
  const started = Date.now();
  await until('0 under-replicated partitions', 120_000, async () =>
    (await underReplicated(brokers, Object.values(topics))) === 0 ? true : undefined,
  );
  return `${((Date.now() - started) / 1000).toFixed(1)} s later`;
}

const sendRaw = async (request: {
  topic: string;
  compression: number;
  messages: Array<{ key: string; value: string }>;
}) => {
  await producer.send({ ...request, acks: -1 });
};

/** Highest summed ingest_consumer_lag and oldest newest-event age the consumer reports over `ms`. */
async function watchLagMetric(ms: number): Promise<{ lag: number; age: number }> {
  let lag = 0;
  let age = 0;
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const text = await fetch('http://127.0.0.1:19601/metrics', {
      signal: AbortSignal.timeout(1_000),
    })
      .then((r) => r.text())
      .catch(() => '');
    const values = (name: string) =>
      [...text.matchAll(new RegExp(`^${name}\\{[^}]*telemetry[^}]*\\} ([\\d.e+]+)`, 'gm'))].map(
        (m) => Number(m[1]),
      );
    lag = Math.max(
      lag,
      values('ingest_consumer_lag').reduce((n, v) => n + v, 0),
    );
    age = Math.max(age, ...values('ingest_newest_event_age_seconds'));
    await sleep(500);
  }
  return { lag, age };
}

// ---- main -----------------------------------------------------------------------------------

function table(): string {
  const head =
    '| scenario | events produced | lost | events in the model | mismatches | moved backwards | fault to caught up | last broker back to caught up | consumer /readyz | API answers during the fault | notes |';
  const seconds = (s: number | null) => (s === null ? '-' : `${s.toFixed(1)} s`);
  const lines = rows.map(
    (r) =>
      `| ${r.scenario} | ${r.produced} | ${r.lost} | ${r.inModel} | ${r.mismatches} | ${r.backwards} | ${seconds(r.caughtUpS)} | ${seconds(r.backToCaughtUpS)} | ${r.consumerReadyz} | ${r.api} | ${r.notes} |`,
  );
  return [head, '|---|---|---|---|---|---|---|---|---|---|---|', ...lines].join('\n');
}

let failed = false;
try {
  await setup();
  // The short profile (CI) keeps the single broker's restart (c) and, on three brokers, the
  // rolling restart (j); the full profile adds a kill -9 (i) and the coordinator's broker (k).
  const all = CLUSTER
    ? SHORT
      ? ['j']
      : ['i', 'j', 'k']
    : ['f', 'a', 'g', 'd', 'b', 'h', 'c', 'l', 'n', 'e', 'm'];
  const order = args.only?.split(',') ?? all;
  for (const id of order) {
    const entry = SCENARIOS[id];
    if (!entry) throw new Error(`no scenario ${id}`);
    await scenario(...entry);
  }
} catch (error) {
  failed = true;
  console.error(`fault suite failed: ${(error as Error).stack}`);
  for (const p of [consumer, api].filter(Boolean)) {
    console.error(`--- last log lines of ${p.name}`);
    for (const l of p.logs.slice(-15)) console.error(JSON.stringify(l).slice(0, 400));
  }
} finally {
  for (const p of [consumer, api]) p?.signal('SIGTERM');
  await Promise.all([consumer?.exited, api?.exited]);
  await producer?.disconnect().catch(() => undefined);
  redis?.disconnect();
  await stack.stop().catch((e) => console.error(String(e)));
}
const text = table();
console.log(`\n${text}\n`);
const outDir = join(ROOT, '.local', 'faults');
mkdirSync(outDir, { recursive: true });
writeFileSync(
  join(outDir, `last-run-${SHORT ? 'short' : 'full'}${CLUSTER ? '-cluster' : ''}.md`),
  `Fault suite, ${new Date().toISOString()}, profile ${SHORT ? 'short' : 'full'}, ${RATE} telemetry events/s, ${INSTALLATIONS.length} installations, ${stack.brokerCount} broker(s) (\`npm run test:faults -- --profile ${SHORT ? 'short' : 'full'}${CLUSTER ? ' --kafka cluster' : ''}\`)\n\n${text}\n`,
);
process.exit(failed || rows.some((r) => !r.ok) ? 1 : 0);
