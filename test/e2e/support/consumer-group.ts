import kafkajs from 'kafkajs';
import type { Admin } from '../../../consumers/kafka/client.js';

const { AssignerProtocol, Kafka, logLevel } = kafkajs;

// What the broker says about a consumer group: who holds which partitions, and how far the group
// has committed. Read from Kafka itself, not from the processes, so a dead member cannot vouch
// for its own work.

/** The topic's partitions per member of the group, keyed by the member's client id. */
export async function assignment(
  brokers: readonly string[],
  groupId: string,
  topic: string,
): Promise<{ state: string; members: Map<string, number[]> }> {
  const admin = new Kafka({
    brokers: [...brokers],
    clientId: 'e2e-group-view',
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  try {
    const {
      groups: [group],
    } = await admin.describeGroups([groupId]);
    const members = new Map<string, number[]>();
    for (const m of group?.members ?? []) {
      const decoded = AssignerProtocol.MemberAssignment.decode(m.memberAssignment);
      const partitions = [...(decoded?.assignment[topic] ?? [])].sort((a, b) => a - b);
      members.set(m.clientId, [...(members.get(m.clientId) ?? []), ...partitions]);
    }
    return { state: group?.state ?? 'Unknown', members };
  } finally {
    await admin.disconnect();
  }
}

/** Sum over the topics of end offset minus the group's committed offset (a partition never
 * committed counts from its log start). `groupOf` names the group that reads each topic. */
export async function lag(
  admin: Admin,
  topics: readonly string[],
  groupOf: (topic: string) => string,
): Promise<bigint> {
  let total = 0n;
  for (const topic of topics) {
    const [ends, committed] = await Promise.all([
      admin.endOffsets(topic),
      admin.committedOffsets(groupOf(topic), topic),
    ]);
    for (const e of ends) {
      const c = committed.find((x) => x.partition === e.partition)?.offset ?? e.start;
      total += BigInt(e.end) - BigInt(c);
    }
  }
  return total;
}

/** The group's committed offset per partition of the topic (log start where none). */
export async function committed(
  admin: Admin,
  groupId: string,
  topic: string,
): Promise<Map<number, bigint>> {
  const [ends, offsets] = await Promise.all([
    admin.endOffsets(topic),
    admin.committedOffsets(groupId, topic),
  ]);
  return new Map(
    ends.map((e) => [
      e.partition,
      BigInt(offsets.find((x) => x.partition === e.partition)?.offset ?? e.start),
    ]),
  );
}
