import { randomUUID } from 'node:crypto';
import { type Kafka, Partitioners } from 'kafkajs';
import { PRODUCER_METADATA_MAX_AGE_MS } from '../../consumers/kafka/partitioned-send.js';
import type { Config } from '../../src/config.js';
import {
  deadLetterId,
  REPLAY_HEADERS,
  type ReplayRecord,
  replayLogTopic,
  replayRecordSchema,
} from '../../src/domain/dead-letter.js';
import { type DeadLetter, sourceId, toDeadLetter } from './dead-letter-view.js';
import { readTopic } from './topic-reader.js';

// Sends chosen dead letters back to their source topic with their original key, value and
// headers plus the replay marker; the key picks the partition, as for any producer. Each chunk
// and its replay-log records go in one Kafka transaction under one transactional id per
// dead-letter topic (replayTransactionalId), so:
// - a replay is recorded exactly when it was sent (consumers read committed);
// - a second run, even a concurrent one, finds it in the log and sends nothing: starting a run
//   fences any earlier run still open, and the log is read only after that;
// - the log, keyed by the message's source coordinates, sends a message dead-lettered twice (a
//   consumer redelivery) once;
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

/** The dead letters on the topic that `keep` keeps, oldest first per partition. */
export async function readDeadLetters(
  kafka: Kafka,
  topic: string,
  keep: (d: DeadLetter) => boolean = () => true,
): Promise<DeadLetter[]> {
  return readTopic(kafka, topic, {
    select: (partition, message) => {
      const d = toDeadLetter(topic, partition, message);
      return keep(d) ? d : undefined;
    },
  });
}

const toStderr = (line: string) => process.stderr.write(`${line}\n`);

/**
 * The replay log, by the source coordinates of each message replayed (see sourceId). A record
 * that is not a replay record (not JSON, another shape) is skipped with a warning: one stray
 * write must not stop every command.
 */
export async function readReplayLog(
  kafka: Kafka,
  deadLetterTopic: string,
  warn: (line: string) => void = toStderr,
): Promise<Map<string, ReplayRecord>> {
  const topic = replayLogTopic(deadLetterTopic);
  const records = await readTopic(kafka, topic, {
    select: (partition, message) => {
      const text = message.value?.toString('utf8');
      const parsed = replayRecordSchema.safeParse(text === undefined ? null : jsonOrNull(text));
      if (parsed.success) return parsed.data;
      warn(`skipped ${topic}:${partition}:${message.offset}: not a replay record`);
      return undefined;
    },
  });
  return new Map(records.map((r) => [deadLetterId(r.source), r]));
}

function jsonOrNull(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** The producer's headers, byte for byte, with this replay's marker in place of any earlier one. */
function replayHeaders(d: DeadLetter, count: number): Record<string, Buffer | string> {
  const dropped = new Set<string>(Object.values(REPLAY_HEADERS));
  const kept = Object.entries(d.producerHeaders).filter(([name]) => !dropped.has(name));
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
  const done = log.get(sourceId(d));
  if (done)
    return `already replayed at ${done.at} by ${done.by} (run ${done.run}, ${deadLetterId(done.deadLetter)})`;
  if (!replayableTopics(topics).includes(d.source.topic))
    return `source topic ${JSON.stringify(d.source.topic)} is not an input topic`;
  if (d.value === null && d.reason !== 'invalid_key')
    return `no value to send (${d.reason}): find it at ${d.source.topic}:${d.source.partition}:${d.source.offset}`;
  if (d.replayCount >= maxReplays)
    return `replayed ${d.replayCount} times already (--max-replays ${maxReplays}): fix the cause first`;
  return null;
}

/** Where a replay goes: the topic, and the partition only when it is not the key's to choose. */
function destination(d: DeadLetter): { topic: string; partition?: number } {
  // A message without a key has no partition of its own (the partitioner would pick one at
  // random) and no later event it could overtake: it goes back where it was first, so the plan
  // names exactly where it lands.
  return d.key === null
    ? { topic: d.source.topic, partition: d.source.partition }
    : { topic: d.source.topic };
}

const destinationText = (to: { topic: string; partition?: number }) =>
  to.partition === undefined ? `${to.topic} (partition by key)` : `${to.topic}:${to.partition}`;

export async function replayDeadLetters(deps: {
  kafka: Kafka;
  topics: Config['topics'];
  transactionalId: string;
  letters: readonly DeadLetter[];
  options: ReplayOptions;
  ensureLogTopic: () => Promise<void>;
  /** Where a warning goes (a stray record on the replay log); default stderr. */
  warn?: (line: string) => void;
}): Promise<ReplayReport> {
  const { kafka, topics, letters, options } = deps;
  const run = randomUUID();
  const producer = options.dryRun
    ? null
    : kafka.producer({
        transactionalId: deps.transactionalId,
        idempotent: true,
        maxInFlightRequests: 1,
        // The Java client's murmur2 of the key, as every producer of these topics uses, over
        // metadata as young as theirs: a partition added to the topic is seen as they see it.
        createPartitioner: Partitioners.DefaultPartitioner,
        metadataMaxAge: PRODUCER_METADATA_MAX_AGE_MS,
      });
  try {
    if (producer) {
      await deps.ensureLogTopic();
      await producer.connect(); // fences an earlier run still open before the log is read
    }
    const log = await readReplayLog(kafka, topics.deadletter, deps.warn);
    const skipped: { id: string; why: string }[] = [];
    const chosen: DeadLetter[] = [];
    const chosenBySource = new Map<string, string>();
    for (const d of letters) {
      const same = chosenBySource.get(sourceId(d));
      const why = same
        ? `the same message as ${same} (${sourceId(d)})`
        : whyNot(d, topics, log, options.maxReplays);
      if (why) skipped.push({ id: d.id, why });
      else {
        chosen.push(d);
        chosenBySource.set(sourceId(d), d.id);
      }
    }
    const planned = (d: DeadLetter, to: string): ReplayPlanItem => ({
      id: d.id,
      to,
      replayCount: d.replayCount + 1,
    });
    if (!producer) {
      const plan = chosen.map((d) => planned(d, destinationText(destination(d))));
      return { run, dryRun: true, sent: plan, skipped };
    }

    const sent: ReplayPlanItem[] = [];
    const chunkSize = Math.max(1, Math.min(100, Math.floor(options.ratePerSecond)));
    const started = Date.now();
    for (let i = 0; i < chosen.length; i += chunkSize) {
      // Paced: never more than ratePerSecond on average, counted from the start of the run.
      const due = started + (i / options.ratePerSecond) * 1000;
      if (Date.now() < due) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
      const chunk = chosen.slice(i, i + chunkSize);
      const tx = await producer.transaction();
      const chunkSent: ReplayPlanItem[] = [];
      try {
        for (const d of chunk) {
          const { topic, partition } = destination(d);
          // One message per request: kafkajs 2.2.4 can skip a multi-partition request on retry
          // (consumers/kafka/partitioned-send.ts).
          const [written] = await tx.send({
            topic,
            messages: [
              {
                ...(partition !== undefined && { partition }),
                key: d.key,
                value: d.value,
                headers: replayHeaders(d, d.replayCount + 1),
              },
            ],
          });
          if (written === undefined) throw new Error(`kafkajs did not send ${d.id} to ${topic}`);
          chunkSent.push(planned(d, `${topic}:${written.partition}`));
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
            return { key: sourceId(d), value: JSON.stringify(record) };
          }),
        });
        await tx.commit();
        sent.push(...chunkSent);
      } catch (error) {
        await tx.abort().catch(() => undefined);
        throw error;
      }
    }
    return { run, dryRun: false, sent, skipped };
  } finally {
    await producer?.disconnect();
  }
}
