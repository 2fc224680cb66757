import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { writeEpoch } from '../src/read-model/epoch.js';
import { createKeys } from '../src/read-model/keys.js';
import { connectRedis, type RedisClient, scanKeys } from '../src/read-model/redis-connection.js';
import type { KafkaClient } from './kafka/client.js';
import { createKafkajsClient } from './kafka/kafkajs-client.js';

// The operator's one command for a read model that lost its data (docs/reliability.md,
// "Rebuilding the read model"): empties the key prefix, moves every consumer group to the
// start of its topic, then writes a new epoch marker. The consumers started afterwards replay
// every event still retained into the empty model; replaying is idempotent.
//   node --import tsx consumers/rebuild.ts
// The broker refuses while a group has members: stop the consumer processes first.

const ROLES = ['installations', 'access', 'telemetry'] as const;

export interface RebuildResult {
  readonly keysDeleted: number;
  /** Events the consumers will replay, per topic. */
  readonly toReplay: Readonly<Record<string, string>>;
}

export async function rebuildReadModel(deps: {
  kafka: KafkaClient;
  redis: RedisClient;
  keyPrefix: string;
  groups: ReadonlyArray<{ readonly topic: string; readonly groupId: string }>;
  clock: () => number;
  logger: Logger;
}): Promise<RebuildResult> {
  const admin = await deps.kafka.createAdmin();
  try {
    // Offsets first: a group with members makes the broker refuse, before anything is deleted.
    const toReplay: Record<string, string> = {};
    for (const { topic, groupId } of deps.groups) {
      let total = 0n;
      for (const end of await admin.endOffsets(topic)) total += BigInt(end.end) - BigInt(end.start);
      await admin.resetToStart(groupId, topic);
      toReplay[topic] = total.toString();
    }
    // One key per command, so each touches one slot; on a cluster, every master is scanned.
    let keysDeleted = 0;
    const pattern = `${deps.keyPrefix.replace(/[*?[\]\\]/g, '\\$&')}*`;
    for await (const found of scanKeys(deps.redis, pattern))
      for (const key of found) keysDeleted += await deps.redis.unlink(key);
    // Last: a rebuild interrupted before this point leaves the marker missing, so the
    // consumers still refuse to start and the command is simply run again.
    const marker = await writeEpoch(deps.redis, createKeys(deps.keyPrefix), deps.clock(), {
      replace: true,
    });
    deps.logger.warn({ keysDeleted, toReplay, epoch: marker.id }, 'read model reset for a rebuild');
    return { keysDeleted, toReplay };
  } finally {
    await admin.disconnect();
  }
}

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, name: 'rebuild' });
  const kafka = createKafkajsClient({
    brokers: config.kafka.brokers,
    clientId: `${config.kafka.clientId}-rebuild`,
    logger,
  });
  const redis = connectRedis(config.redis, { maxRetriesPerRequest: 1 });
  try {
    const done = await rebuildReadModel({
      kafka,
      redis,
      keyPrefix: config.redis.keyPrefix,
      groups: ROLES.map((role) => ({
        topic: config.topics[role],
        groupId: `${config.consumer.groupId}.${role}`,
      })),
      clock: Date.now,
      logger,
    });
    const replay = Object.entries(done.toReplay).map(([t, n]) => `${n} on ${t}`);
    process.stdout.write(
      `read model emptied (${done.keysDeleted} keys) and groups moved to the start: start the ` +
        `consumers; they replay ${replay.join(', ')} (ingest_consumer_lag falls to 0 when done)\n`,
    );
  } finally {
    redis.disconnect();
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  main().catch((error: unknown) => {
    process.stderr.write(`rebuild: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
