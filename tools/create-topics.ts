import { z } from 'zod';
import { createKafkajsClient } from '../consumers/kafka/kafkajs-client.js';
import { deviceMovesSpec, topicSpecs } from '../consumers/kafka/topics.js';
import { loadConfig } from '../src/config.js';
import { createCliLogger, runCommand, usageText } from './cli.js';

// Ensures the four topics of spec/events.md with their cleanup policies, and the consumer
// group's internal device-moves topic (docs/events.md). Existing topics are left as they are,
// so it is safe to run on every start.

const DEADLINE_MS = 120_000; // a cold broker needs a while before it accepts admin requests

const spec = {
  name: 'create-topics',
  usage: usageText({
    name: 'create-topics',
    synopsis: '',
    about:
      "Creates the topics the service reads and writes (TOPIC_*, and the consumer group's\n" +
      '<CONSUMER_GROUP>.device-moves) that do not exist yet, then prints each one. Topics that\n' +
      'exist are left as they are.',
    options: '',
  }),
  options: {},
  schema: z.object({}),
};

runCommand(spec, async () => {
  const config = loadConfig();
  const logger = createCliLogger({ level: config.logLevel, name: 'create-topics' });
  const specs = [...topicSpecs(config.topics), deviceMovesSpec(config.consumer.groupId)];
  const timer = setTimeout(() => {
    process.stderr.write(
      `create-topics: Kafka at ${config.kafka.brokers.join(',')} did not accept the topics within ${DEADLINE_MS / 1000} s\n`,
    );
    process.exit(1);
  }, DEADLINE_MS);
  const admin = await createKafkajsClient({
    brokers: config.kafka.brokers,
    clientId: `${config.kafka.clientId}-admin`,
    logger,
  }).createAdmin();
  try {
    await admin.ensureTopics(specs);
  } finally {
    clearTimeout(timer);
    await admin.disconnect();
  }
  for (const s of specs) {
    process.stdout.write(
      `topic ${s.topic}: ${s.numPartitions} partitions, cleanup.policy=${s.cleanupPolicy}\n`,
    );
  }
});
