import { z } from 'zod';
import { createKafkajsClient } from '../consumers/kafka/kafkajs-client.js';
import { loadConfig } from '../src/config.js';
import { groupIdOf, TOPIC_ROLES } from '../src/consumer-groups.js';
import { connectRedis } from '../src/read-model/redis-connection.js';
import { createCliLogger, runCommand, usageText } from './cli.js';
import {
  assertConfirmable,
  busyGroups,
  confirm,
  EXECUTE_HELP,
  EXECUTE_OPTIONS,
  refuseBusy,
} from './destructive.js';
import { planRebuild, type RebuildPlan, rebuildReadModel } from './rebuild/read-model-rebuild.js';

// Rebuilds a read model that lost its data (docs/operations.md, "Rebuilding the read model").
// A dry run unless --execute; refuses while a consumer group has members.

const spec = {
  name: 'rebuild',
  usage: usageText({
    name: 'rebuild',
    synopsis: '[--execute [--yes]]',
    about:
      'Empties the read model (every key under REDIS_KEY_PREFIX), moves the three consumer groups\n' +
      'to the start of their topics and writes a new epoch marker; the consumers started\n' +
      'afterwards replay every retained event into it. Stop every consumer process first: it\n' +
      'refuses while a group has members. Without --execute it only prints the plan.',
    options: EXECUTE_HELP,
  }),
  options: EXECUTE_OPTIONS,
  schema: z.object({
    execute: z.boolean().default(false),
    yes: z.boolean().default(false),
  }),
};

const out = (line: string) => process.stdout.write(`${line}\n`);

function printPlan(plan: RebuildPlan, prefix: string, groupOf: Map<string, string>, dry: boolean) {
  out(dry ? 'rebuild plan (dry run: nothing changed; add --execute to do it):' : 'rebuild plan:');
  out(`  delete ${plan.keys} key(s) under ${JSON.stringify(prefix)}`);
  for (const [topic, events] of Object.entries(plan.toReplay))
    out(`  move ${groupOf.get(topic)} to the start of ${topic} (${events} event(s) to replay)`);
  out('  write a new epoch marker (the API answers 503 until the consumers have caught up)');
  const busy = busyGroups(plan.groups);
  if (busy && dry) out(`--execute would refuse now: ${busy}`);
}

runCommand(spec, async (args) => {
  assertConfirmable(args);
  const config = loadConfig();
  const logger = createCliLogger({ level: config.logLevel, name: 'rebuild' });
  const kafka = createKafkajsClient({
    brokers: config.kafka.brokers,
    clientId: `${config.kafka.clientId}-rebuild`,
    logger,
  });
  const redis = connectRedis(config.redis, { maxRetriesPerRequest: 1 });
  const groups = TOPIC_ROLES.map((role) => ({
    topic: config.topics[role],
    groupId: groupIdOf(config, role),
  }));
  const deps = { kafka, redis, keyPrefix: config.redis.keyPrefix, groups };
  try {
    const plan = await planRebuild(deps);
    printPlan(
      plan,
      deps.keyPrefix,
      new Map(groups.map((g) => [g.topic, g.groupId])),
      !args.execute,
    );
    if (!args.execute) return;
    refuseBusy(plan.groups);
    await confirm(`delete ${plan.keys} key(s) and rebuild from the topics?`, args.yes);
    const done = await rebuildReadModel({ ...deps, clock: Date.now, logger });
    const replay = Object.entries(done.toReplay).map(([t, n]) => `${n} on ${t}`);
    out(
      `read model emptied (${done.keysDeleted} keys) and groups moved to the start: start the ` +
        `consumers; they replay ${replay.join(', ')} (ingest_consumer_lag falls to 0 when done)`,
    );
  } finally {
    redis.disconnect();
  }
});
