import kafkajs from 'kafkajs';

const { Kafka, logLevel } = kafkajs;

// What an operator checks between the steps of a rolling restart, read with an admin client:
// partitions whose in-sync replicas are fewer than their replicas, and which broker leads a
// partition (the group coordinator is the leader of the group's __consumer_offsets partition).

const OFFSETS_TOPIC = '__consumer_offsets';
/** offsets.topic.num.partitions in infra/stack.sh. */
const OFFSETS_PARTITIONS = 10;

async function withAdmin<T>(
  brokers: readonly string[],
  use: (admin: ReturnType<InstanceType<typeof Kafka>['admin']>) => Promise<T>,
): Promise<T> {
  const kafka = new Kafka({
    brokers: [...brokers],
    clientId: 'fault-brokers',
    logLevel: logLevel.NOTHING,
    retry: { retries: 2 },
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await use(admin);
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}

/** Partitions of `topics` (and of the group offsets topic) not fully replicated, or leaderless. */
export function underReplicated(
  brokers: readonly string[],
  topics: readonly string[],
): Promise<number> {
  return withAdmin(brokers, async (admin) => {
    const { topics: found } = await admin.fetchTopicMetadata({
      topics: [...topics, OFFSETS_TOPIC],
    });
    return found
      .flatMap((t) => t.partitions)
      .filter((p) => p.leader < 0 || p.isr.length < p.replicas.length).length;
  });
}

/** The broker (node id) that leads `partition` of `topic` now. */
export function brokerOf(
  brokers: readonly string[],
  topic: string,
  partition: number,
): Promise<number> {
  return withAdmin(brokers, async (admin) => {
    const { topics } = await admin.fetchTopicMetadata({ topics: [topic] });
    const leader = topics[0]?.partitions.find((p) => p.partitionId === partition)?.leader;
    if (leader === undefined || leader < 0) throw new Error(`${topic}-${partition} has no leader`);
    return leader;
  });
}

/** The __consumer_offsets partition that holds `groupId`, as Kafka places it (Java hashCode). */
export function coordinatorPartition(groupId: string): { topic: string; partition: number } {
  let hash = 0;
  for (let i = 0; i < groupId.length; i++) hash = (Math.imul(hash, 31) + groupId.charCodeAt(i)) | 0;
  // Kafka's Utils.abs: the sign bit cleared, so Integer.MIN_VALUE maps to 0, not to itself.
  return { topic: OFFSETS_TOPIC, partition: (hash & 0x7fffffff) % OFFSETS_PARTITIONS };
}
