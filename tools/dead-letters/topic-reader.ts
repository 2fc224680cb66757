import { randomUUID } from 'node:crypto';
import type { Kafka, KafkaMessage } from 'kafkajs';

// Reads a topic from its start to the end it has when the read begins (read committed), with a
// throwaway consumer group that commits nothing and is deleted afterwards. Each message is
// handed to `select` as it arrives and only what it returns is kept: a dead-letter topic during
// an incident is large, the operator's filter is usually narrow.

export interface ReadOptions<T> {
  /** What to keep of a message, or undefined to drop it. */
  readonly select: (partition: number, message: KafkaMessage) => T | undefined;
  /** Give up after this long; default: readDeadlineMs of the messages to read. */
  readonly deadlineMs?: number;
}

/** A minute, plus a millisecond per message: a read stuck, not a large topic, times out. */
export const readDeadlineMs = (messages: bigint): number =>
  Math.min(60_000 + Number(messages), MAX_TIMER_MS);
const MAX_TIMER_MS = 2 ** 31 - 1; // setTimeout's limit (about 24 days)

/** What `select` kept, in partition order, oldest first within a partition. */
export async function readTopic<T>(
  kafka: Kafka,
  topic: string,
  options: ReadOptions<T>,
): Promise<T[]> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    if (!(await admin.listTopics()).includes(topic)) return [];
    // read_committed: `high` is the last stable offset, so an open transaction is not waited for.
    const ends = await admin.fetchTopicOffsets(topic);
    const pending = new Map(
      ends.filter((e) => BigInt(e.high) > BigInt(e.low)).map((e) => [e.partition, BigInt(e.high)]),
    );
    if (pending.size === 0) return [];
    const messages = ends.reduce((n, e) => n + BigInt(e.high) - BigInt(e.low), 0n);
    const deadlineMs = options.deadlineMs ?? readDeadlineMs(messages);
    const groupId = `dead-letters-reader-${randomUUID()}`;
    const consumer = kafka.consumer({ groupId, readUncommitted: false });
    const kept = new Map<number, T[]>();
    // The next offset to take per partition: a batch fetched again (kafkajs restarting after a
    // retriable error, nothing committed) is not taken twice.
    const next = new Map<number, bigint>();
    let finish: () => void = () => undefined;
    const done = new Promise<void>((resolve) => {
      finish = resolve;
    });
    // Batches of transaction markers alone never reach eachBatch; their end event does.
    consumer.on(consumer.events.END_BATCH_PROCESS, ({ payload }) => {
      const end = pending.get(payload.partition);
      if (end !== undefined && BigInt(payload.lastOffset) + 1n >= end)
        pending.delete(payload.partition);
      if (pending.size === 0) finish();
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          const end = pending.get(batch.partition) ?? 0n;
          const into = kept.get(batch.partition) ?? [];
          kept.set(batch.partition, into);
          for (const message of batch.messages) {
            const offset = BigInt(message.offset);
            if (offset >= end || offset < (next.get(batch.partition) ?? 0n)) continue;
            next.set(batch.partition, offset + 1n);
            const selected = options.select(batch.partition, message);
            if (selected !== undefined) into.push(selected);
          }
        },
      });
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new Error(`reading ${messages} messages of ${topic} took over ${deadlineMs} ms`),
            ),
          deadlineMs,
        );
      });
      await Promise.race([done, timeout]).finally(() => clearTimeout(timer));
    } finally {
      await consumer.disconnect();
      await admin.deleteGroups([groupId]).catch(() => undefined);
    }
    return [...kept].sort(([a], [b]) => a - b).flatMap(([, list]) => list);
  } finally {
    await admin.disconnect();
  }
}
