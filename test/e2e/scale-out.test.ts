import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import type { Admin } from '../../consumers/kafka/client.js';
import { topicSpecs } from '../../consumers/kafka/topics.js';
import { loadConfig } from '../../src/config.js';
import { groupIdOf, TOPIC_ROLES, type TopicRole } from '../../src/consumer-groups.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import { newApiKey } from '../../tools/seed/records.js';
import { connectedProducer, kafkaFor, seedFleet, startLoad } from '../faults/load.js';
import { compareApi, compareModel, foldTelemetry } from '../faults/oracle.js';
import type { ServiceProcess } from '../faults/processes.js';
import { recordFigures } from '../support/figures.js';
import {
  dropPrefix,
  isolatedEnv,
  kafkaBrokers,
  testKafkaClient,
  testRedis,
  uniqueId,
  waitFor,
} from '../support/stack.js';
import { assignment, committed, lag } from './support/consumer-group.js';
import { apiKeyCreated, applicationUpserted } from './support/events.js';
import {
  describeTally,
  markDown,
  type PollTally,
  pollReplicas,
  replica,
} from './support/replica-poller.js';
import { startApiService, startConsumerService, stopServices, tail } from './support/services.js';

// Issue 14, item 3: two consumer processes in one group and two API processes, all real
// processes on the suite's Kafka and RedisClient. A consumer SIGKILLed mid-stream hands its partitions
// to the other, and the read model, and what both API processes serve, equal the fold of the
// topics as Kafka holds them. API replicas restarted one at a time under polling load give no
// answer but 200/304; only the one being restarted may leave a request unanswered (refused, or
// its connection closed under it).

const TELEMETRY_PARTITIONS = 6;
const INSTALLATIONS = Array.from({ length: 60 }, (_, i) => i + 1);
const RATE = 200; // telemetry events per second
const API_PORTS = [18481, 18482] as const;

describe('e2e: scale-out, two consumers and two API replicas', () => {
  const id = uniqueId('scale');
  const env: Record<string, string> = {
    ...isolatedEnv(id),
    LOG_LEVEL: 'info',
    // The broker's minimum: a killed member's partitions move on after 6 s instead of 10 s.
    CONSUMER_SESSION_TIMEOUT_MS: '6000',
    CONSUMER_LAG_INTERVAL_MS: '1000',
  };
  const config = loadConfig(env);
  const { topics } = config;
  const group = (role: TopicRole) => groupIdOf(config, role);
  const groupOf = (topic: string) =>
    group(TOPIC_ROLES.find((role) => topics[role] === topic) ?? 'installations');
  const reader = newApiKey();
  const replicas = API_PORTS.map((port, i) => replica(`api-${i + 1}`, `http://127.0.0.1:${port}`));
  const consumers = new Map<'a' | 'b', ServiceProcess>();
  const apis: ServiceProcess[] = [];
  let admin: Admin;
  let redis: RedisClient;
  let producer: Producer;

  const everyProcess = () => [...consumers.values(), ...apis];
  const dumpLogs = () => {
    for (const p of everyProcess()) console.error(`--- ${p.name} (pid ${p.pid})\n${tail(p)}`);
  };
  const caughtUp = (timeoutMs: number) =>
    waitFor(
      'every group committed to the end of its topic',
      async () =>
        (await lag(admin, [topics.installations, topics.telemetry, topics.access], groupOf)) === 0n
          ? true
          : undefined,
      timeoutMs,
    );

  beforeAll(async () => {
    admin = await testKafkaClient().createAdmin();
    // Created before either process starts, so both see the same six telemetry partitions.
    await admin.ensureTopics(topicSpecs(topics, TELEMETRY_PARTITIONS));
    redis = testRedis();
    producer = await connectedProducer(kafkaFor(kafkaBrokers().join(',')));
    const [a, b] = await Promise.all(
      (['a', 'b'] as const).map((name) =>
        startConsumerService(`consumer-${name}`, { ...env, KAFKA_CLIENT_ID: `consumer-${name}` }),
      ),
    );
    consumers.set('a', a as ServiceProcess).set('b', b as ServiceProcess);
    apis.push(
      ...(await Promise.all(
        API_PORTS.map((port, i) => startApiService(`api-${i + 1}`, port, env)),
      )),
    );
    await seedFleet(producer, topics, INSTALLATIONS, [
      applicationUpserted(1, { type: 'user', id: 9 }),
      apiKeyCreated('reader', 1, reader),
    ]);
    await caughtUp(30_000);
  }, 90_000);

  afterAll(async () => {
    await stopServices(everyProcess());
    await producer?.disconnect();
    await admin?.disconnect();
    if (redis) {
      await dropPrefix(redis, config.redis.keyPrefix);
      redis.disconnect();
    }
  }, 30_000);

  it('a consumer SIGKILLed mid-stream: the other takes its partitions, the model equals the fold', async () => {
    onTestFailed(dumpLogs);
    const a = consumers.get('a') as ServiceProcess;
    const b = consumers.get('b') as ServiceProcess;
    const all = Array.from({ length: TELEMETRY_PARTITIONS }, (_, p) => p);
    // Both members hold telemetry partitions before the fault, between them all six.
    const before = await waitFor(
      'both consumers hold telemetry partitions',
      async () => {
        const view = await assignment(kafkaBrokers(), group('telemetry'), topics.telemetry);
        const held = [...view.members.values()];
        const union = held.flat().sort((x, y) => x - y);
        return view.state === 'Stable' &&
          held.length === 2 &&
          held.every((p) => p.length > 0) &&
          JSON.stringify(union) === JSON.stringify(all)
          ? view.members
          : undefined;
      },
      30_000,
    );
    const orphaned = before.get('consumer-a') ?? [];
    expect(orphaned.length).toBeGreaterThan(0);

    const load = startLoad(producer, topics.telemetry, INSTALLATIONS, RATE);
    try {
      // Mid-stream: consumer-a has committed telemetry of the load on its partitions.
      const atStart = await committed(admin, group('telemetry'), topics.telemetry);
      const killedAt = await waitFor(
        'consumer-a committing under load',
        async () => {
          const now = await committed(admin, group('telemetry'), topics.telemetry);
          return orphaned.every((p) => (now.get(p) ?? 0n) > (atStart.get(p) ?? 0n))
            ? now
            : undefined;
        },
        20_000,
      );
      a.signal('SIGKILL');
      expect(await a.exited).toBe('SIGKILL');
      const killed = Date.now();

      const after = await waitFor(
        'consumer-b holds all six telemetry partitions',
        async () => {
          const view = await assignment(kafkaBrokers(), group('telemetry'), topics.telemetry);
          const held = view.members.get('consumer-b') ?? [];
          return view.state === 'Stable' && view.members.size === 1 && held.length === all.length
            ? held
            : undefined;
        },
        30_000,
      );
      expect(after).toEqual(all);
      recordFigures(
        'scale-out',
        `scale-out: consumer-b owned consumer-a's partitions ${Date.now() - killed} ms after the SIGKILL`,
      );
      // Telemetry keeps flowing onto the taken-over partitions before the load stops.
      const produced = load.produced();
      await waitFor('a second of load after the takeover', async () =>
        load.produced() >= produced + RATE ? true : undefined,
      );
      await load.stop();
      await caughtUp(30_000);

      // consumer-b committed past where consumer-a stopped, on every partition consumer-a held.
      const end = await committed(admin, group('telemetry'), topics.telemetry);
      for (const p of orphaned) expect(end.get(p)).toBeGreaterThan(killedAt.get(p) ?? 0n);
    } finally {
      await load.stop();
    }
    expect(b.alive()).toBe(true);

    const fold = await foldTelemetry(kafkaBrokers().join(','), topics.telemetry);
    expect(fold.rejects.size).toBe(0);
    const model = await compareModel(
      redis,
      config.redis.keyPrefix,
      fold,
      INSTALLATIONS,
      config.ingest.onlineWindowSeconds,
    );
    expect(model).toEqual({ mismatches: 0, examples: [] });
    for (const r of replicas) {
      const served = await compareApi(
        `${r.origin}${config.api.basePath}`,
        reader,
        fold,
        INSTALLATIONS,
      );
      expect(served, r.name).toEqual({ mismatches: 0, examples: [] });
    }
  }, 90_000);

  it('API replicas restarted one at a time under polling load: 200/304 or refused while down', async () => {
    onTestFailed(dumpLogs);
    const watched = INSTALLATIONS.slice(0, 4);
    const paths = watched.flatMap((inst) => [
      `${config.api.basePath}/getInstallationDevices?installationId=${inst}`,
      `${config.api.basePath}/getInstallationCurrentEnergyFlow?installationId=${inst}`,
    ]);
    // Bodies change under the pollers, so they see 200s and 304s both.
    const load = startLoad(producer, topics.telemetry, watched, 20);
    const poller = pollReplicas({
      replicas,
      paths,
      apiKey: reader,
      workersPerReplica: 2,
      pauseMs: 10,
      // Generous: a loaded 2-core machine may be slow; a hung request still fails the test.
      timeoutMs: 15_000,
    });
    let tally: PollTally | undefined;
    try {
      for (const [i, stopping] of replicas.entries()) {
        const others = replicas.filter((r) => r !== stopping);
        const othersBefore = others.map((r) => poller.answered(r.name));
        markDown(stopping);
        const refusedBefore = poller.refused(stopping.name);
        const old = apis[i] as ServiceProcess;
        old.signal('SIGTERM');
        expect(await old.exited, `${stopping.name} exit on SIGTERM`).toBe('0');
        // The pollers reached it while it was down, so the refusals are part of what is checked.
        await waitFor(`${stopping.name} refused while down`, async () =>
          poller.refused(stopping.name) > refusedBefore ? true : undefined,
        );
        apis[i] = await startApiService(stopping.name, API_PORTS[i] as number, env);
        stopping.state = 'up';
        const answeredAgain = poller.answered(stopping.name);
        await waitFor(`${stopping.name} answers again`, async () =>
          poller.answered(stopping.name) >= answeredAgain + 20 ? true : undefined,
        );
        // The other replica served throughout.
        others.forEach((r, j) => {
          expect(
            poller.answered(r.name),
            `${r.name} while ${stopping.name} was down`,
          ).toBeGreaterThan(othersBefore[j] as number);
        });
      }
    } finally {
      tally = await poller.stop();
      await load.stop();
      recordFigures(
        'scale-out',
        `scale-out: API answers during the restarts: ${describeTally(tally)}`,
      );
    }
    expect(tally.unexpected, describeTally(tally)).toEqual([]);
  }, 90_000);
});
