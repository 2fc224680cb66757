import { userInfo } from 'node:os';
import { z } from 'zod';
import { createKafkajs, createKafkajsClient } from '../consumers/kafka/kafkajs-client.js';
import { loadConfig } from '../src/config.js';
import {
  REJECT_REASONS,
  replayLogTopic,
  replayTransactionalId,
} from '../src/domain/dead-letter.js';
import { createCliLogger, parseCli, runCli, UsageError } from './cli.js';
import {
  countsByReason,
  type DeadLetter,
  type Filter,
  listLine,
  matches,
  printable,
  sourceId,
} from './dead-letters/dead-letter-view.js';
import { readDeadLetters, readReplayLog, replayDeadLetters } from './dead-letters/replay.js';

// The operator's tool for the dead-letter topic (docs/operations.md, DeadLettering): list and
// show what the consumers refused and why, then send chosen dead letters back once the cause is
// fixed. Same configuration as the consumers (KAFKA_BROKERS, TOPIC_*).

const USAGE = `usage: node dist/tools/dead-letters.js list|show|replay [filters] [options]
       (or: npm run dead-letters -- list ...; npx tsx tools/dead-letters.ts list ...)

  list      one line per dead letter, then the counts by reason
  show      every detail of each, the payload included (secrets masked)
  replay    send them back to their source topic; a dry run unless --execute

filters (all must match):
  --topic T          source topic (e.g. device-telemetry.v1)
  --reason R         ${REJECT_REASONS.join(', ')}
  --key K            the original message key
  --installation N   named by the key or the payload
  --since TIME       dead-lettered at or after (RFC 3339, e.g. 2024-03-01T10:00:00Z)
  --until TIME       dead-lettered before
  --id ID[,ID]       exact dead letters, as list prints them (topic:partition:offset)
  --not-replayed     only those not replayed yet

options:
  --json             JSON output (list: one object per line, then the counts)
  --execute          replay: really send (default: print what would be sent)
  --rate N           replay: messages per second at most (default 50)
  --max-replays N    replay: skip a dead letter replayed this often already (default 3)
  --operator NAME    replay: who replays, for the audit (default: the OS user)`;

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
  execute: bool,
  rate: str,
  'max-replays': str,
  operator: str,
};

const out = (line: string) => process.stdout.write(`${line}\n`);

runCli(USAGE, async () => {
  const [command, ...rest] = process.argv.slice(2);
  if (command !== 'list' && command !== 'show' && command !== 'replay')
    throw new UsageError(`unknown command ${JSON.stringify(command ?? '')}`);
  const args = parseCli(rest, OPTIONS, argsSchema);
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
  try {
    const report = await replayDeadLetters({
      kafka,
      topics: config.topics,
      transactionalId: replayTransactionalId(dlq),
      letters,
      options: {
        dryRun: !args.execute,
        ratePerSecond: args.rate,
        maxReplays: args['max-replays'],
        by: args.operator ?? userInfo().username,
      },
      ensureLogTopic: () =>
        admin.ensureTopics([
          { topic: replayLogTopic(dlq), numPartitions: 1, cleanupPolicy: 'compact' },
        ]),
    });
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
