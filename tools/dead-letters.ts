import { userInfo } from 'node:os';
import { z } from 'zod';
import { createKafkajs, createKafkajsClient } from '../consumers/kafka/kafkajs-client.js';
import { loadConfig } from '../src/config.js';
import {
  REJECT_REASONS,
  replayLogTopic,
  replayTransactionalId,
} from '../src/domain/dead-letter.js';
import { createCliLogger, runCommand, usageText } from './cli.js';
import {
  countsByReason,
  type DeadLetter,
  type Filter,
  listLine,
  matches,
  printable,
  sourceId,
} from './dead-letters/dead-letter-view.js';
import {
  type ReplayOptions,
  readDeadLetters,
  readReplayLog,
  replayDeadLetters,
} from './dead-letters/replay.js';
import { assertConfirmable, confirm, EXECUTE_OPTIONS } from './destructive.js';

// The operator's tool for the dead-letter topic (docs/operations.md, DeadLettering): list and
// show what the consumers refused and why, then send chosen dead letters back once the cause is
// fixed. Same configuration as the consumers (KAFKA_BROKERS, TOPIC_*).

const USAGE = usageText({
  name: 'dead-letters',
  synopsis: 'list|show|replay [filters] [options]\n       (or: npm run dead-letters -- list ...)',
  about: `  list      one line per dead letter, then the counts by reason
  show      every detail of each: the payload and the producer's headers (secrets masked)
  replay    send them back to their source topic; a dry run unless --execute`,
  options: `filters (all must match):
  --topic T               source topic (e.g. device-telemetry.v1)
  --reason R              ${REJECT_REASONS.join(', ')}
  --key K                 the original message key
  --installation N        named by the key or the payload
  --since TIME            dead-lettered at or after (RFC 3339, e.g. 2024-03-01T10:00:00Z)
  --until TIME            dead-lettered before
  --id ID[,ID]            exact dead letters, as list prints them (topic:partition:offset)
  --not-replayed          only those not replayed yet

options:
  --json                  JSON output (list: one object per line, then the counts)
  --execute               replay: really send (default: print what would be sent)
  -y, --yes               replay --execute: do not ask (required when stdin is not a terminal)
  --rate N                replay: messages per second at most (default 50)
  --max-replays N         replay: skip a dead letter replayed this often already (default 3)
  --operator NAME         replay: who replays, for the audit (default: the OS user)`,
});

const time = z.iso.datetime({ offset: true }).transform((t) => Date.parse(t));
const argsSchema = z.object({
  topic: z.string().min(1).optional(),
  reason: z.enum(REJECT_REASONS as [string, ...string[]]).optional(),
  key: z.string().optional(),
  installation: z.coerce.number().int().positive().optional(),
  since: time.optional(),
  until: time.optional(),
  id: z
    .string()
    .regex(/^[^,]+:\d+:\d+(,[^,]+:\d+:\d+)*$/, 'topic:partition:offset[,…]')
    .transform((s) => s.split(','))
    .optional(),
  'not-replayed': z.boolean().default(false),
  json: z.boolean().default(false),
  execute: z.boolean().default(false),
  yes: z.boolean().default(false),
  rate: z.coerce.number().positive().max(10_000).default(50),
  'max-replays': z.coerce.number().int().positive().default(3),
  operator: z.string().min(1).optional(),
});

const str = { type: 'string' } as const;
const bool = { type: 'boolean' } as const;
const OPTIONS = {
  topic: str,
  reason: str,
  key: str,
  installation: str,
  since: str,
  until: str,
  id: str,
  'not-replayed': bool,
  json: bool,
  ...EXECUTE_OPTIONS,
  rate: str,
  'max-replays': str,
  operator: str,
};

const out = (line: string) => process.stdout.write(`${line}\n`);

const spec = {
  name: 'dead-letters',
  usage: USAGE,
  options: OPTIONS,
  schema: argsSchema,
  commands: ['list', 'show', 'replay'],
} as const;

runCommand(spec, async (args, command) => {
  if (command === 'replay') assertConfirmable(args);
  const config = loadConfig();
  const logger = createCliLogger({ level: config.logLevel, name: 'dead-letters' });
  const clientOptions = {
    brokers: config.kafka.brokers,
    clientId: `${config.kafka.clientId}-dead-letters`,
    logger,
  };
  // kafkajs itself for the transactional replay and the reads; the service's client for topics.
  const kafka = createKafkajs(clientOptions);

  const dlq = config.topics.deadletter;
  const filter: Filter = {
    ...(args.topic !== undefined && { topic: args.topic }),
    ...(args.reason !== undefined && { reason: args.reason }),
    ...(args.key !== undefined && { key: args.key }),
    ...(args.installation !== undefined && { installation: args.installation }),
    ...(args.since !== undefined && { sinceMs: args.since }),
    ...(args.until !== undefined && { untilMs: args.until }),
    ...(args.id !== undefined && { ids: args.id }),
  };
  const log = await readReplayLog(kafka, dlq);
  const letters: DeadLetter[] = await readDeadLetters(
    kafka,
    dlq,
    (d) => matches(d, filter) && !(args['not-replayed'] && log.has(sourceId(d))),
  );

  if (command === 'list' || command === 'show') {
    for (const d of letters) {
      const replayed = log.get(sourceId(d));
      if (args.json || command === 'show') {
        const view = printable(d, replayed ? `${replayed.at} by ${replayed.by}` : null);
        out(args.json ? JSON.stringify(view) : JSON.stringify(view, null, 2));
      } else out(listLine(d, replayed !== undefined));
    }
    const counts = countsByReason(letters);
    if (args.json) out(JSON.stringify({ total: letters.length, byReason: counts }));
    else {
      out(`${letters.length} dead letter(s) on ${dlq}`);
      for (const [reason, n] of Object.entries(counts)) out(`  ${reason}: ${n}`);
    }
    return;
  }

  const admin = await createKafkajsClient(clientOptions).createAdmin();
  const replay = (dryRun: boolean) => {
    const options: ReplayOptions = {
      dryRun,
      ratePerSecond: args.rate,
      maxReplays: args['max-replays'],
      by: args.operator ?? userInfo().username,
    };
    return replayDeadLetters({
      kafka,
      topics: config.topics,
      transactionalId: replayTransactionalId(dlq),
      letters,
      options,
      ensureLogTopic: () =>
        admin.ensureTopics([
          { topic: replayLogTopic(dlq), numPartitions: 1, cleanupPolicy: 'compact' },
        ]),
    });
  };
  try {
    if (args.execute && !args.yes) {
      // Asked on a terminal, after the plan (on stderr: stdout is the run's own report).
      const plan = await replay(true);
      const err = (line: string) => process.stderr.write(`${line}\n`);
      for (const s of plan.sent) err(`would send ${s.id} -> ${s.to} (replay ${s.replayCount})`);
      for (const s of plan.skipped) err(`skipped ${s.id}: ${s.why}`);
      await confirm(`send ${plan.sent.length} dead letter(s) back?`, false);
    }
    const report = await replay(!args.execute);
    if (args.json) out(JSON.stringify(report));
    else {
      const verb = report.dryRun ? 'would send' : 'sent';
      for (const s of report.sent) out(`${verb} ${s.id} -> ${s.to} (replay ${s.replayCount})`);
      for (const s of report.skipped) out(`skipped ${s.id}: ${s.why}`);
      out(
        report.dryRun
          ? `dry run: ${report.sent.length} to send, ${report.skipped.length} skipped; add --execute to send`
          : `run ${report.run}: ${report.sent.length} sent, ${report.skipped.length} skipped; recorded on ${replayLogTopic(dlq)}`,
      );
    }
  } finally {
    await admin.disconnect();
  }
});
