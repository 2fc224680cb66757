import {
  type Admin,
  type Kafka,
  type Message,
  Partitioners,
  type PartitionMetadata,
  type Producer,
  type ProducerRecord,
} from 'kafkajs';

// kafkajs 2.2.4 can acknowledge messages it never sent. A send to several partitions is one
// request per leader; when a request fails and the retry finds its partitions now led by a
// broker that already answered (a leader moved: a broker restart), it skips that broker and
// resolves (kafkajs pull request #1798, open). So every request here carries one partition:
// its retry always goes to the partition's current leader. The partition is chosen as kafkajs
// would (the Java client's murmur2 of the key), from the topic's metadata. kafkajs also
// resolves a send to a partition its metadata lacks (one just added) without sending it: that
// is refused here, retriable, and the producer's metadata is kept young so the retry lands.

const METADATA_TTL_MS = 30_000;

export interface PartitionedSend {
  send(record: ProducerRecord): Promise<void>;
  /** Closes the metadata connection (not the producer). */
  close(): Promise<void>;
}

/** Retriable: the producer's metadata catches up with the topic within its maximum age. */
export class PartitionNotSentError extends Error {
  readonly retriable = true;
  constructor(topic: string, partition: number) {
    super(`${topic}/${partition} is not in the producer's metadata yet: nothing was sent`);
  }
}

/** For producers given to partitionedSend: how stale their view of a topic's partitions gets. */
export const PRODUCER_METADATA_MAX_AGE_MS = 3_000;

export function partitionedSend(kafka: Kafka, producer: Producer): PartitionedSend {
  const partitioner = Partitioners.DefaultPartitioner();
  const known = new Map<string, { partitions: PartitionMetadata[]; at: number }>();
  const refreshing = new Set<string>();
  let admin: Promise<Admin> | null = null;
  let closed = false;
  const fetchPartitions = async (topic: string): Promise<PartitionMetadata[]> => {
    if (closed) throw new Error('the producer is disconnected');
    admin ??= (async () => {
      const a = kafka.admin();
      await a.connect();
      return a;
    })().catch((error: unknown) => {
      admin = null;
      throw error;
    });
    const { topics } = await (await admin).fetchTopicMetadata({ topics: [topic] });
    const partitions = topics[0]?.partitions ?? [];
    if (partitions.length === 0) throw new Error(`topic ${topic} has no partitions`);
    known.set(topic, { partitions, at: Date.now() });
    return partitions;
  };
  // Known partitions are used at once and refreshed behind the sends: a metadata request that
  // waits out a dead broker must not hold up the sends that do not need it.
  const partitionsOf = async (topic: string): Promise<PartitionMetadata[]> => {
    const cached = known.get(topic);
    if (!cached) return fetchPartitions(topic);
    if (Date.now() - cached.at >= METADATA_TTL_MS && !refreshing.has(topic)) {
      refreshing.add(topic);
      void fetchPartitions(topic)
        .catch(() => undefined)
        .finally(() => refreshing.delete(topic));
    }
    return cached.partitions;
  };
  const send = async (record: ProducerRecord) => {
    const partitionMetadata = await partitionsOf(record.topic);
    const byPartition = new Map<number, Message[]>();
    for (const message of record.messages) {
      const partition =
        message.partition ?? partitioner({ topic: record.topic, partitionMetadata, message });
      const group = byPartition.get(partition) ?? [];
      group.push({ ...message, partition });
      byPartition.set(partition, group);
    }
    // Partitions at once (each in order): as fast as one request per leader was.
    await Promise.all(
      [...byPartition].map(async ([partition, messages]) => {
        const sent = await producer.send({ ...record, messages });
        // kafkajs also resolves, sending nothing, for a partition its own metadata does not
        // have yet (one added to the topic since): no answer for it means not sent.
        if (!sent.some((r) => r.partition === partition)) {
          known.delete(record.topic);
          throw new PartitionNotSentError(record.topic, partition);
        }
      }),
    );
  };
  return {
    send,
    async close() {
      closed = true;
      const a = await admin?.catch(() => null);
      admin = null;
      await a?.disconnect();
    },
  };
}
