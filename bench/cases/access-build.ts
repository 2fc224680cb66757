import { Kafka, logLevel } from 'kafkajs';
import { groupIdOf } from '../../src/consumer-groups.js';
import { hashApiKey } from '../../src/domain/access-rule.js';
import { installation } from '../../tools/seed/records.js';
import { cpuSecondsOf } from '../lib/cpu.js';
import { numberArg } from '../lib/options.js';
import { type Child, httpOk, startChild, waitUntil } from '../lib/processes.js';
import {
  BASE_PATH as BASE,
  benchKafka,
  benchRedis,
  dropPrefix,
  KAFKA_BROKERS,
  type Message,
  produceAll,
  REDIS_URL,
  usedMemory,
} from '../lib/stack.js';
import { loadAverage } from '../lib/standalone.js';
import { percentile } from '../lib/stats.js';

// Issue 37's rows: building one application of --grants grants through Kafka and the consumer
// process (grants applied per second, target >= 5,000/s), the API's refusal of other
// applications' keys revoked while it builds (produce to 401, p99 target <= 1 s), and Redis
// memory per grant. Baseline, same run, same topic: the least a projector of grants does, in
// this process (kafkajs eachBatch; per batch one pipeline of the installations' JSON, one of an
// acl field and a view member per grant, then commit).
//   npx tsx bench/cases/access-build.ts [--grants 100000] [--revoke-every-ms 100]

const GRANTS = numberArg('grants', 100_000);
const REVOKE_EVERY_MS = numberArg('revoke-every-ms', 100);
const PORT = numberArg('port', 18301);
const SMALL_APPS = 200;
const BIG = 1;
const COMPANY = 7;
const FIRST = 1_000_000;
const run = `access-${Date.now().toString(36)}`;
const prefix = `bench:${run}:`;
const topics = {
  installations: `bench-${run}-installations`,
  access: `bench-${run}-access`,
  telemetry: `bench-${run}-telemetry`,
  deadletter: `bench-${run}-deadletter`,
};
const env = {
  REDIS_URL,
  KAFKA_BROKERS,
  REDIS_KEY_PREFIX: prefix,
  TOPIC_INSTALLATIONS: topics.installations,
  TOPIC_ACCESS: topics.access,
  TOPIC_TELEMETRY: topics.telemetry,
  TOPIC_DEADLETTER: topics.deadletter,
  CONSUMER_GROUP: `bench-${run}`,
  LOG_LEVEL: 'warn',
};
const at = new Date().toISOString();
const fact = (key: string, event: object): Message => ({
  key,
  value: JSON.stringify({ occurredAt: at, ...event }),
});
const appFact = (applicationId: number) =>
  fact(`app:${applicationId}`, {
    type: 'application.upserted',
    applicationId,
    owner: { type: 'company', id: COMPANY },
    enabled: true,
  });
const apiKey = (app: number) => `itk_${'a'.repeat(24)}${String(app).padStart(8, '0')}`;
const keyFact = (app: number) =>
  fact(`key:k${app}`, {
    type: 'apiKey.created',
    keyId: `k${app}`,
    applicationId: app,
    keyHash: hashApiKey(apiKey(app)),
    expiresAt: null,
  });
const grantFact = (app: number, id: number) =>
  fact(`grant:${app}:${id}`, { type: 'grant.added', applicationId: app, installationId: id });
const upsert = (id: number): Message => ({
  key: String(id),
  value: JSON.stringify({
    type: 'installation.upserted',
    occurredAt: at,
    installation: installation(id),
    companyId: COMPANY,
  }),
});
const smallApps = Array.from({ length: SMALL_APPS }, (_, i) => 100 + i);
const flowOf = (app: number) =>
  fetch(
    `http://127.0.0.1:${PORT}${BASE}/getInstallationCurrentEnergyFlow?installationId=${FIRST + app}`,
    {
      headers: { 'api-key': apiKey(app) },
    },
  ).then((r) => r.status);

const kafka = await benchKafka(run);
const redis = benchRedis();
const children: Child[] = [];
try {
  for (const topic of Object.values(topics)) await kafka.createTopic(topic, 3);
  const ids = Array.from({ length: GRANTS }, (_, i) => FIRST + i);
  await produceAll(kafka.producer, topics.installations, ids.map(upsert));
  await produceAll(kafka.producer, topics.access, [
    appFact(BIG),
    keyFact(BIG),
    ...smallApps.flatMap((app) => [appFact(app), keyFact(app), grantFact(app, FIRST + app)]),
  ]);
  const consumers = startChild({
    name: 'consumers',
    script: 'consumers/main.ts',
    env: { ...env, CONSUMER_HEALTH_PORT: String(PORT + 1) },
  });
  const api = startChild({
    name: 'api',
    script: 'api/main.ts',
    env: { ...env, API_PORT: String(PORT) },
  });
  children.push(consumers, api);
  await waitUntil('the API', () => httpOk(`http://127.0.0.1:${PORT}/healthz`), 60_000, api, 200);
  await waitUntil(
    'every small key served',
    async () => (await Promise.all(smallApps.map(flowOf))).every((s) => s === 200),
    120_000,
    consumers,
    200,
  );
  // The installations projected first: the build measures grants, not installations arriving.
  const installed = await kafka.endOffset(topics.installations);
  await waitUntil(
    'the installations projected',
    async () =>
      (await kafka.committed(
        groupIdOf({ consumer: { groupId: env.CONSUMER_GROUP } }, 'installations'),
        topics.installations,
      )) >= installed,
    300_000,
    consumers,
    200,
  );
  console.log(`load average before: ${loadAverage()}`);
  const memoryBefore = await usedMemory(redis);

  // The build, and the revocations produced while it runs.
  const latencies: number[] = [];
  let building = true;
  // Revocations come from a client of their own (another team's service), not from behind the
  // bulk producer's queue.
  const revoker = await benchKafka(`${run}-revoker`);
  const revoking = (async () => {
    for (const app of smallApps) {
      if (!building) break;
      const sent = performance.now();
      await revoker.producer.send({
        topic: topics.access,
        acks: 1,
        messages: [fact(`key:k${app}`, { type: 'apiKey.revoked', keyId: `k${app}` })],
      });
      while ((await flowOf(app)) !== 401) await new Promise((r) => setTimeout(r, 5));
      latencies.push(performance.now() - sent);
      await new Promise((r) => setTimeout(r, REVOKE_EVERY_MS));
    }
  })();
  // What the access path costs per grant: the consumer process's CPU, and Redis's (the API's
  // polls of the revoked keys ride on it, a few hundred requests).
  const consumerCpuBefore = cpuSecondsOf(consumers.pid);
  const redisCpuBefore = await redisCpuSeconds(redis);
  const started = performance.now();
  await produceAll(
    kafka.producer,
    topics.access,
    ids.map((id) => grantFact(BIG, id)),
  );
  const view = `${prefix}{a${BIG}}:view`;
  const end = await kafka.endOffset(topics.access);
  const group = groupIdOf({ consumer: { groupId: env.CONSUMER_GROUP } }, 'access');
  let factsSeconds = 0;
  while ((await redis.zcard(view)) < GRANTS) {
    if (factsSeconds === 0 && (await kafka.committed(group, topics.access)) >= end)
      factsSeconds = (performance.now() - started) / 1000;
    await new Promise((r) => setTimeout(r, 20));
  }
  const seconds = (performance.now() - started) / 1000;
  factsSeconds ||= seconds;
  const consumerUsPerGrant = ((cpuSecondsOf(consumers.pid) - consumerCpuBefore) / GRANTS) * 1e6;
  const redisUsPerGrant = (((await redisCpuSeconds(redis)) - redisCpuBefore) / GRANTS) * 1e6;
  building = false;
  await revoking;
  await revoker.close();
  const memoryPerGrant = ((await usedMemory(redis)) - memoryBefore) / GRANTS;

  // The baseline on the same topic: grants only, into a prefix of its own.
  const base = `bench:${run}-floor:`;
  const floor = new Kafka({
    clientId: `${run}-floor`,
    brokers: KAFKA_BROKERS.split(','),
    logLevel: logLevel.ERROR,
  });
  const consumer = floor.consumer({ groupId: `${run}-floor` });
  await consumer.connect();
  await consumer.subscribe({ topic: topics.access, fromBeginning: true });
  let done = 0;
  const floorStarted = performance.now();
  await consumer.run({
    eachBatch: async ({ batch }) => {
      const grants = batch.messages
        .map(
          (m) =>
            JSON.parse(String(m.value)) as {
              type: string;
              applicationId: number;
              installationId: number;
            },
        )
        .filter((e) => e.type === 'grant.added');
      const reads = redis.pipeline();
      for (const g of grants) reads.get(`${prefix}{i${g.installationId}}:inst`);
      const jsons = (await reads.exec()) ?? [];
      const writes = redis.pipeline();
      grants.forEach((g, i) => {
        writes.hset(`${base}{i${g.installationId}}:acl`, String(g.applicationId), '1');
        writes.zadd(`${base}{a${g.applicationId}}:view`, g.installationId, String(jsons[i]?.[1]));
      });
      await writes.exec();
      done += grants.length;
    },
  });
  while (done < GRANTS + SMALL_APPS) await new Promise((r) => setTimeout(r, 20));
  const floorSeconds = (performance.now() - floorStarted) / 1000;
  await consumer.disconnect();
  await dropPrefix(redis, base);

  console.log(
    `revocation latencies in order (ms): ${latencies.map((l) => l.toFixed(0)).join(' ')}`,
  );
  latencies.sort((a, b) => a - b);
  const rate = GRANTS / seconds;
  const floorRate = (GRANTS + SMALL_APPS) / floorSeconds;
  console.log(`load average after: ${loadAverage()}`);
  console.log('| row | project | baseline (least grant projector) | ratio |');
  console.log('|---|---|---|---|');
  console.log(
    `| grants applied per second, ${GRANTS.toLocaleString('en')}-grant application (target >= 5,000) | ${Math.round(rate).toLocaleString('en')} (${seconds.toFixed(1)} s) | ${Math.round(floorRate).toLocaleString('en')} (${floorSeconds.toFixed(1)} s) | ${(rate / floorRate).toFixed(2)}x |`,
  );
  console.log(
    `| the same grants stored as facts, their work recorded and offsets committed, per second | ${Math.round(GRANTS / factsSeconds).toLocaleString('en')} (${factsSeconds.toFixed(1)} s) | - | - |`,
  );
  console.log(
    `| revocation to API 401 while it builds, p50 / p99 / max (${latencies.length} revocations, target p99 <= 1 s) | ${percentile(latencies, 50).toFixed(0)} / ${percentile(latencies, 99).toFixed(0)} / ${(latencies[latencies.length - 1] ?? 0).toFixed(0)} ms | - | - |`,
  );
  console.log(
    `| CPU per grant applied: the consumer process / Redis | ${consumerUsPerGrant.toFixed(1)} / ${redisUsPerGrant.toFixed(1)} µs | - | - |`,
  );
  console.log(
    `| Redis memory per grant (facts, acl entry, view entry with the installation's JSON) | ${Math.round(memoryPerGrant)} B | - | - |`,
  );
} finally {
  await Promise.all(children.map((c) => c.stop()));
  await dropPrefix(redis, prefix);
  await kafka.deleteTopics(Object.values(topics));
  await kafka.close();
  redis.disconnect();
}

/** Redis's CPU time so far (INFO cpu: user + system, main thread and the rest). */
async function redisCpuSeconds(redis: ReturnType<typeof benchRedis>): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1]);
  return field('used_cpu_user') + field('used_cpu_sys');
}
