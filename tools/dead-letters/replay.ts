import { randomUUID } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { Config } from '../../src/config.js';
import {
  DEAD_LETTER_HEADERS,
  deadLetterId,
  REPLAY_HEADERS,
  type ReplayRecord,
  replayLogTopic,
  replayRecordSchema,
} from '../../src/domain/dead-letter.js';
import { type DeadLetter, toDeadLetter } from './dead-letter-view.js';
import { readTopic } from './topic-reader.js';

// Sends chosen dead letters back to their source topic and partition with their original key,
// value and headers plus the replay marker. Each chunk and its replay-log records go in one Kafka
// transaction under one transactional id, so:
// - a replay is recorded exactly when it was sent (consumers read committed);
// - a second run, even a concurrent one, finds it in the log and sends nothing: starting a run
//   fences any earlier run still open, and the log is read only after that;
// - the log is the audit: who, when, which dead letter, to where.

export interface ReplayOptions {
  readonly dryRun: boolean;
  /** Messages per second at most. */
  readonly ratePerSecond: number;
  /** A dead letter that was already replayed this often is not sent again. */
  readonly maxReplays: number;
  /** Who runs the replay (the audit's `by`). */
  readonly by: string;
}

export interface ReplayPlanItem {
  readonly id: string;
  readonly to: string;
  readonly replayCount: number;
}
export interface ReplayReport {
  readonly run: string;
  readonly dryRun: boolean;
  readonly sent: readonly ReplayPlanItem[];
  readonly skipped: ReadonlyArray<{ readonly id: string; readonly why: string }>;
}

/** The topics a dead letter may go back to: the consumers' input topics, nothing else. */
const replayableTopics = (topics: Config['topics']) => [
  topics.installations,
  topics.telemetry,
  topics.access,
];

/** Every dead letter on the topic, oldest first per partition. */
export async function readDeadLetters(kafka: Kafka, topic: string): Promise<DeadLetter[]> {
  return (await readTopic(kafka, topic)).map((r) => toDeadLetter(topic, r.partition, r.message));
}

export async function readReplayLog(
  kafka: Kafka,
  deadLetterTopic: string,
): Promise<Map<string, ReplayRecord>> {
  const log = new Map<string, ReplayRecord>();
  for (const { message } of await readTopic(kafka, replayLogTopic(deadLetterTopic))) {
    const parsed = replayRecordSchema.safeParse(JSON.parse(message.value?.toString() ?? 'null'));
    if (parsed.success) log.set(deadLetterId(parsed.data.deadLetter), parsed.data);
  }
  return log;
}

function replayHeaders(d: DeadLetter, count: number): Record<string, string> {
  const dropped = new Set<string>([
    ...Object.values(DEAD_LETTER_HEADERS),
    ...Object.values(REPLAY_HEADERS),
  ]);
  const kept = Object.entries(d.headers).filter(([name]) => !dropped.has(name));
  return {
    ...Object.fromEntries(kept),
    [REPLAY_HEADERS.replayOf]: d.id,
    [REPLAY_HEADERS.replayCount]: String(count),
  };
}

function whyNot(
  d: DeadLetter,
  topics: Config['topics'],
  log: Map<string, ReplayRecord>,
  maxReplays: number,
): string | null {
  const done = log.get(d.id);
  if (done) return `already replayed at ${done.at} by ${done.by} (run ${done.run})`;
  if (!replayableTopics(topics).includes(d.source.topic))
    return `source topic ${JSON.stringify(d.source.topic)} is not an input topic`;
  if (d.value === null && d.reason !== 'invalid_key')
    return `no value to send (${d.reason}): find it at ${d.source.topic}:${d.source.partition}:${d.source.offset}`;
  if (d.replayCount >= maxReplays)
    return `replayed ${d.replayCount} times already (--max-replays ${maxReplays}): fix the cause first`;
  return null;
}

export async function replayDeadLetters(deps: {
  kafka: Kafka;
  topics: Config['topics'];
  transactionalId: string;
  letters: readonly DeadLetter[];
  options: ReplayOptions;
  ensureLogTopic: () => Promise<void>;
}): Promise<ReplayReport> {
  const { kafka, topics, letters, options } = deps;
  const run = randomUUID();
  const producer = options.dryRun
    ? null
    : kafka.producer({
        transactionalId: deps.transactionalId,
        idempotent: true,
        maxInFlightRequests: 1,
      });
  try {
    if (producer) {
      await deps.ensureLogTopic();
      await producer.connect(); // fences an earlier run still open before the log is read
    }
    const log = await readReplayLog(kafka, topics.deadletter);
    const skipped: { id: string; why: string }[] = [];
    const chosen: DeadLetter[] = [];
    for (const d of letters) {
      const why = whyNot(d, topics, log, options.maxReplays);
      if (why) skipped.push({ id: d.id, why });
      else chosen.push(d);
    }
    const plan = chosen.map((d) => ({
      id: d.id,
      to: `${d.source.topic}:${d.source.partition}`,
      replayCount: d.replayCount + 1,
    }));
    if (!producer) return { run, dryRun: true, sent: plan, skipped };

    const chunkSize = Math.max(1, Math.min(100, Math.floor(options.ratePerSecond)));
    const started = Date.now();
    for (let i = 0; i < chosen.length; i += chunkSize) {
      // Paced: never more than ratePerSecond on average, counted from the start of the run.
      const due = started + (i / options.ratePerSecond) * 1000;
      if (Date.now() < due) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
      const chunk = chosen.slice(i, i + chunkSize);
      const tx = await producer.transaction();
      try {
        for (const d of chunk) {
          await tx.send({
            topic: d.source.topic,
            messages: [
              {
                partition: d.source.partition,
                key: d.key,
                value: d.value,
                headers: replayHeaders(d, d.replayCount + 1),
              },
            ],
          });
        }
        const at = new Date().toISOString();
        await tx.send({
          topic: replayLogTopic(topics.deadletter),
          messages: chunk.map((d) => {
            const record: ReplayRecord = {
              type: 'deadLetter.replayed',
              deadLetter: { topic: topics.deadletter, partition: d.partition, offset: d.offset },
              source: d.source,
              reason: d.reason,
              replayCount: d.replayCount + 1,
              by: options.by,
              at,
              run,
            };
            return { key: d.id, value: JSON.stringify(record) };
          }),
        });
        await tx.commit();
      } catch (error) {
        await tx.abort().catch(() => undefined);
        throw error;
      }
    }
    return { run, dryRun: false, sent: plan, skipped };
  } finally {
    await producer?.disconnect();
  }
}
