import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { StartedTestContainer } from 'testcontainers';
import { type ContainerEngine, TEST_LABEL } from './container-engine.js';

// Kafka and Redis started with testcontainers on host networking: each listens on a loopback port
// chosen here (defaults apart from the native stack's, so both can run at once).

export interface ContainerStack {
  readonly brokers: string[];
  readonly redisUrl: string;
  /** Kafka's log directory, bind-mounted from the host: tests that corrupt a segment reach it. */
  readonly kafkaDataDir: string;
  stop(): Promise<void>;
}

const LOG_DIR_IN_CONTAINER = '/var/lib/kafka/data';

export async function startContainerStack(engine: ContainerEngine): Promise<ContainerStack> {
  const kafkaPort = Number(process.env.KAFKA_PORT ?? 29092);
  const controllerPort = Number(process.env.KAFKA_CONTROLLER_PORT ?? 29093);
  const redisPort = Number(process.env.REDIS_PORT ?? 26379);
  const { GenericContainer, Wait, getContainerRuntimeClient } = await import('testcontainers');
  const client = await getContainerRuntimeClient();
  const ports = `${kafkaPort},${controllerPort},${redisPort}`;
  // A run killed before its teardown leaves its containers holding these ports: remove them.
  await removeByLabel(client, `${TEST_LABEL}.ports=${ports}`);
  const run = randomBytes(4).toString('hex');
  const labels = {
    [TEST_LABEL]: 'stack',
    [`${TEST_LABEL}.ports`]: ports,
    [`${TEST_LABEL}.run`]: run,
  };
  // A fresh log directory per run; world-writable for the official image's non-root user.
  const kafkaDataDir = fileURLToPath(
    new URL(`../../.local/containers/kafka-data-${kafkaPort}`, import.meta.url),
  );
  rmSync(kafkaDataDir, { recursive: true, force: true });
  mkdirSync(kafkaDataDir, { recursive: true });
  chmodSync(kafkaDataDir, 0o777);

  const redis = new GenericContainer(engine.redisImage)
    .withNetworkMode('host')
    .withLabels(labels)
    .withCommand([
      'redis-server',
      ...['--port', String(redisPort), '--bind', '127.0.0.1'],
      // As the native stack: never evict, AOF fsynced on every write (docs/operations.md).
      ...['--appendonly', 'yes', '--appendfsync', 'always', '--save', ''],
      ...['--maxmemory-policy', 'noeviction'],
    ])
    .withWaitStrategy(Wait.forLogMessage(/Ready to accept connections/))
    .withStartupTimeout(60_000);
  const kafka = new GenericContainer(engine.kafkaImage)
    .withNetworkMode('host')
    .withLabels(labels)
    .withBindMounts([{ source: kafkaDataDir, target: LOG_DIR_IN_CONTAINER }])
    // The official image's convention, which the local image follows: KAFKA_X_Y is property x.y.
    .withEnvironment({
      CLUSTER_ID: 'TZHJ5rfvQ2ihsNNvpEbaGQ',
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: `PLAINTEXT://127.0.0.1:${kafkaPort},CONTROLLER://127.0.0.1:${controllerPort}`,
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${kafkaPort}`,
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_CONTROLLER_QUORUM_VOTERS: `1@127.0.0.1:${controllerPort}`,
      KAFKA_INTER_BROKER_LISTENER_NAME: 'PLAINTEXT',
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
      KAFKA_NUM_PARTITIONS: '3',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS: '10',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      KAFKA_LOG_DIRS: LOG_DIR_IN_CONTAINER,
    })
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .withStartupTimeout(120_000);

  const started: StartedTestContainer[] = [];
  const stop = async () => {
    await Promise.allSettled(started.map((c) => c.stop({ timeout: 10_000 })));
    // Whatever this run left (a container that failed its wait strategy) goes too.
    await removeByLabel(client, `${TEST_LABEL}.run=${run}`);
    rmSync(kafkaDataDir, { recursive: true, force: true });
  };
  try {
    const results = await Promise.allSettled([redis.start(), kafka.start()]);
    for (const r of results) if (r.status === 'fulfilled') started.push(r.value);
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  } catch (error) {
    await stop();
    throw new Error(
      `TEST_STACK=containers: could not start Kafka (${engine.kafkaImage}) and Redis ` +
        `(${engine.redisImage}) on ports ${ports} (${String(error)}). Set KAFKA_PORT, ` +
        'KAFKA_CONTROLLER_PORT and REDIS_PORT if those are taken.',
    );
  }
  return {
    brokers: [`127.0.0.1:${kafkaPort}`],
    redisUrl: `redis://127.0.0.1:${redisPort}`,
    kafkaDataDir,
    stop,
  };
}

type RuntimeClient = Awaited<
  ReturnType<typeof import('testcontainers')['getContainerRuntimeClient']>
>;

async function removeByLabel(client: RuntimeClient, label: string): Promise<void> {
  const leftovers = await client.container.dockerode.listContainers({
    all: true,
    filters: { label: [label] },
  });
  await Promise.allSettled(
    leftovers.map((c) => client.container.getById(c.Id).remove({ force: true })),
  );
}
