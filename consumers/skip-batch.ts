import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { Logger } from 'pino';
import { loadConfig } from '../src/config.js';
import { DEAD_LETTER_HEADERS } from '../src/domain/dead-letter.js';
import { createLogger } from '../src/logger.js';
import type { KafkaClient } from './kafka/client.js';
import { createKafkajsClient } from './kafka/kafkajs-client.js';

// The operator's one command for a record batch no codec decodes (docs/operations.md, "Moving a
// group past an undecodable batch"): records the skipped range on the dead-letter topic, then
// moves the group's committed offset. The consumers never skip on their own.
//   npx tsx consumers/skip-batch.ts --topic T --partition P --to-offset N [--group G]
// The group defaults to the consumer group of that topic (CONSUMER_GROUP + its role). The
// broker refuses while the group has members: stop the consumer processes first.

export interface SkipRequest {
  readonly topic: string;
  readonly partition: number;
  /** The first offset the group reads after the skip (the batch's last offset + 1). */
  readonly toOffset: string;
  readonly groupId: string;
}

export async function skipBatch(deps: {
  kafka: KafkaClient;
  deadLetterTopic: string;
  request: SkipRequest;
  logger: Logger;
}): Promise<{ from: string; to: string }> {
  const { topic, partition, toOffset, groupId } = deps.request;
  const admin = await deps.kafka.createAdmin();
  const producer = deps.kafka.createProducer();
  try {
    const ends = await admin.endOffsets(topic);
    const end = ends.find((e) => e.partition === partition);
    if (!end) throw new Error(`${topic} has no partition ${partition}`);
    const committed = (await admin.committedOffsets(groupId, topic)).find(
      (c) => c.partition === partition,
    )?.offset;
    const from = committed ?? end.start;
    if (BigInt(toOffset) <= BigInt(from)) {
      throw new Error(`group ${groupId} is already at ${from} on ${topic}:${partition}`);
    }
    if (BigInt(toOffset) > BigInt(end.end)) {
      throw new Error(`${toOffset} is past the end of ${topic}:${partition} (${end.end})`);
    }
    // Recorded first: a skip that then fails leaves a record too many, never a skip unrecorded.
    await producer.connect();
    await producer.send(deps.deadLetterTopic, [
      {
        key: null,
        value: null,
        headers: {
          [DEAD_LETTER_HEADERS.sourceTopic]: topic,
          [DEAD_LETTER_HEADERS.sourcePartition]: String(partition),
          [DEAD_LETTER_HEADERS.sourceOffset]: from,
          [DEAD_LETTER_HEADERS.reason]: 'undecodable_batch',
          [DEAD_LETTER_HEADERS.detail]: `operator skipped offsets ${from} to ${BigInt(toOffset) - 1n} of group ${groupId}`,
        },
      },
    ]);
    await admin.setCommittedOffset(groupId, topic, partition, toOffset);
    deps.logger.warn(
      { topic, partition, groupId, from, to: toOffset },
      'group moved past an undecodable batch',
    );
    return { from, to: toOffset };
  } finally {
    await producer.disconnect().catch(() => undefined);
    await admin.disconnect();
  }
}

const ROLES = ['installations', 'access', 'telemetry'] as const;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      topic: { type: 'string' },
      partition: { type: 'string' },
      'to-offset': { type: 'string' },
      group: { type: 'string' },
    },
  });
  const config = loadConfig();
  const logger = createLogger({ level: config.logLevel, name: 'skip-batch' });
  const topic = values.topic;
  const partition = Number(values.partition);
  const toOffset = values['to-offset'];
  if (!topic || !Number.isInteger(partition) || !toOffset || !/^\d+$/.test(toOffset)) {
    throw new Error('usage: skip-batch --topic T --partition P --to-offset N [--group G]');
  }
  const role = ROLES.find((r) => config.topics[r] === topic);
  const groupId = values.group ?? (role ? `${config.consumer.groupId}.${role}` : undefined);
  if (!groupId) throw new Error(`${topic} is not a consumer topic of this config: pass --group`);
  const kafka = createKafkajsClient({
    brokers: config.kafka.brokers,
    clientId: `${config.kafka.clientId}-skip-batch`,
    logger,
  });
  const done = await skipBatch({
    kafka,
    deadLetterTopic: config.topics.deadletter,
    request: { topic, partition, toOffset, groupId },
    logger,
  });
  process.stdout.write(
    `${groupId} now reads ${topic}:${partition} from ${done.to} (skipped ${done.from}-${BigInt(done.to) - 1n}, recorded on ${config.topics.deadletter})\n`,
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  main().catch((error: unknown) => {
    process.stderr.write(`skip-batch: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  });
}
