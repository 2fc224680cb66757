import { z } from 'zod';
import { createKafkajsClient } from '../consumers/kafka/kafkajs-client.js';
import { loadConfig } from '../src/config.js';
import { groupIdOf, TOPIC_ROLES } from '../src/consumer-groups.js';
import { createCliLogger, runCommand, UsageError, usageText } from './cli.js';
import {
  assertConfirmable,
  busyGroups,
  confirm,
  EXECUTE_HELP,
  EXECUTE_OPTIONS,
  refuseBusy,
} from './destructive.js';
import { planSkip, skipBatch, skippedRange } from './skip-batch/batch-skip.js';

// Moves a consumer group past a record batch no codec decodes (docs/operations.md, "Moving a
// group past an undecodable batch"). A dry run unless --execute; refuses while the group has
// members.

const spec = {
  name: 'skip-batch',
  usage: usageText({
    name: 'skip-batch',
    synopsis: '--topic T --partition P --to-offset N [--group G] [--execute [--yes]]',
    about:
      'Records the skipped offsets on the dead-letter topic (reason undecodable_batch), then sets\n' +
      "the group's committed offset on that partition to --to-offset. Stop every consumer process\n" +
      'of the group first: it refuses while the group has members. Without --execute it only\n' +
      'prints the plan.',
    options: `  --topic T               the topic of the batch (e.g. installations.v1)
  --partition P           its partition
  --to-offset N           the first offset to read after the skip (nextOffset of the log line)
  --group G               the consumer group (default: CONSUMER_GROUP plus the topic's role)
${EXECUTE_HELP}`,
  }),
  options: {
    topic: { type: 'string' },
    partition: { type: 'string' },
    'to-offset': { type: 'string' },
    group: { type: 'string' },
    ...EXECUTE_OPTIONS,
  },
  schema: z.object({
    topic: z.string().min(1),
    partition: z.coerce.number().int().min(0),
    'to-offset': z.string().regex(/^\d+$/, 'a whole number'),
    group: z.string().min(1).optional(),
    execute: z.boolean().default(false),
    yes: z.boolean().default(false),
  }),
} as const;

const out = (line: string) => process.stdout.write(`${line}\n`);

runCommand(spec, async (args) => {
  assertConfirmable(args);
  const config = loadConfig();
  const role = TOPIC_ROLES.find((r) => config.topics[r] === args.topic);
  const groupId = args.group ?? (role ? groupIdOf(config, role) : undefined);
  if (!groupId)
    throw new UsageError(`${args.topic} is not a consumer topic of this config: pass --group`);
  const logger = createCliLogger({ level: config.logLevel, name: 'skip-batch' });
  const kafka = createKafkajsClient({
    brokers: config.kafka.brokers,
    clientId: `${config.kafka.clientId}-skip-batch`,
    logger,
  });
  const dlq = config.topics.deadletter;
  const admin = await kafka.createAdmin();
  try {
    const request = {
      topic: args.topic,
      partition: args.partition,
      toOffset: args['to-offset'],
      groupId,
    };
    const plan = await planSkip(admin, request);
    const where = `${args.topic}:${args.partition}`;
    out(
      args.execute ? 'skip plan:' : 'skip plan (dry run: nothing changed; add --execute to do it):',
    );
    out(`  record offsets ${skippedRange(plan)} of ${where} on ${dlq} (reason undecodable_batch)`);
    out(`  move ${groupId} on ${where} from ${plan.from} to ${request.toOffset}`);
    const busy = busyGroups([plan.group]);
    if (!args.execute) {
      if (busy) out(`--execute would refuse now: ${busy}`);
      return;
    }
    refuseBusy([plan.group]);
    await confirm(`skip offsets ${skippedRange(plan)} of ${where} for ${groupId}?`, args.yes);
    await skipBatch({ kafka, admin, deadLetterTopic: dlq, plan, logger });
    out(
      `${groupId} now reads ${where} from ${request.toOffset} (skipped ${skippedRange(plan)}, recorded on ${dlq})`,
    );
  } finally {
    await admin.disconnect();
  }
});
