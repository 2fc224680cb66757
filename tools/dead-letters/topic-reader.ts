import { randomUUID } from 'node:crypto';
import type { Kafka, KafkaMessage } from 'kafkajs';

// Reads a topic from its start to the end it has when the read begins (read committed), with a
// throwaway consumer group that commits nothing and is deleted afterwards.

export interface ReadMessage {
  readonly partition: number;
  readonly message: KafkaMessage;
}

const READ_DEADLINE_MS = 60_000;

export async function readTopic(kafka: Kafka, topic: string): Promise<ReadMessage[]> {
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
    const groupId = `dead-letters-reader-${randomUUID()}`;
    const consumer = kafka.consumer({ groupId, readUncommitted: false });
    const read: ReadMessage[] = [];
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
          for (const message of batch.messages)
            if (BigInt(message.offset) < end) read.push({ partition: batch.partition, message });
        },
      });
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`reading ${topic} took over ${READ_DEADLINE_MS} ms`)),
          READ_DEADLINE_MS,
        );
      });
      await Promise.race([done, timeout]).finally(() => clearTimeout(timer));
    } finally {
      await consumer.disconnect();
      await admin.deleteGroups([groupId]).catch(() => undefined);
    }
    return read.sort(
      (a, b) =>
        a.partition - b.partition || Number(BigInt(a.message.offset) - BigInt(b.message.offset)),
    );
  } finally {
    await admin.disconnect();
  }
}
