import { createKafkajsClient } from '../consumers/kafka/kafkajs-client.js';
import { deviceMovesSpec, topicSpecs } from '../consumers/kafka/topics.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';

// Ensures the four topics of spec/events.md with their cleanup policies, and the consumer
// group's internal device-moves topic (docs/events.md): `npx tsx infra/create-topics.ts`.
// Existing topics are left as they are, so it is safe to run on every start.

const DEADLINE_MS = 120_000; // a cold broker needs a while before it accepts admin requests

const config = loadConfig();
const logger = createLogger({ level: config.logLevel, name: 'create-topics' });
const specs = [...topicSpecs(config.topics), deviceMovesSpec(config.consumer.groupId)];

async function main(): Promise<void> {
  const client = createKafkajsClient({
    brokers: config.kafka.brokers,
    clientId: `${config.kafka.clientId}-admin`,
    logger,
  });
  const admin = await client.createAdmin();
  try {
    await admin.ensureTopics(specs);
  } finally {
    await admin.disconnect();
  }
}

const timer = setTimeout(() => {
  process.stderr.write(
    `create-topics: Kafka at ${config.kafka.brokers.join(',')} did not accept the topics within ${DEADLINE_MS / 1000} s\n`,
  );
  process.exit(1);
}, DEADLINE_MS);

main().then(
  () => {
    clearTimeout(timer);
    for (const s of specs) {
      process.stdout.write(
        `topic ${s.topic}: ${s.numPartitions} partitions, cleanup.policy=${s.cleanupPolicy}\n`,
      );
    }
  },
  (error: unknown) => {
    clearTimeout(timer);
    process.stderr.write(`create-topics: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
