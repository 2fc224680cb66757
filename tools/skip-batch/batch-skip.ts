import type { Logger } from 'pino';
import type { Admin, KafkaClient } from '../../consumers/kafka/client.js';
import { DEAD_LETTER_HEADERS } from '../../src/domain/dead-letter.js';
import { type GroupState, groupStates } from '../destructive.js';

// The operator's one command for a record batch no codec decodes (docs/operations.md, "Moving a
// group past an undecodable batch"): records the skipped range on the dead-letter topic, then
// moves the group's committed offset. The consumers never skip on their own.

export interface SkipRequest {
  readonly topic: string;
  readonly partition: number;
  /** The first offset the group reads after the skip (the batch's last offset + 1). */
  readonly toOffset: string;
  readonly groupId: string;
}

export interface SkipPlan {
  readonly request: SkipRequest;
  /** Where the group stands now: its committed offset, or the log start without one. */
  readonly from: string;
  readonly group: GroupState;
}

/** What a skip would do, read only; throws when the offset is not ahead of the group. */
export async function planSkip(admin: Admin, request: SkipRequest): Promise<SkipPlan> {
  const { topic, partition, toOffset, groupId } = request;
  const ends = await admin.endOffsets(topic);
  const end = ends.find((e) => e.partition === partition);
  if (!end) throw new Error(`${topic} has no partition ${partition}`);
  const committed = (await admin.committedOffsets(groupId, topic)).find(
    (c) => c.partition === partition,
  )?.offset;
  const from = committed ?? end.start;
  if (BigInt(toOffset) <= BigInt(from)) {
    throw new Error(`group ${groupId} is already at ${from} on ${topic}:${partition}`);
  }
  if (BigInt(toOffset) > BigInt(end.end)) {
    throw new Error(`${toOffset} is past the end of ${topic}:${partition} (${end.end})`);
  }
  const [group] = await groupStates(admin, [groupId]);
  return { request, from, group: group as GroupState };
}

export const skippedRange = (plan: SkipPlan): string =>
  `${plan.from}-${BigInt(plan.request.toOffset) - 1n}`;

export async function skipBatch(deps: {
  kafka: KafkaClient;
  admin: Admin;
  deadLetterTopic: string;
  plan: SkipPlan;
  logger: Logger;
}): Promise<void> {
  const { topic, partition, toOffset, groupId } = deps.plan.request;
  const { from } = deps.plan;
  const producer = deps.kafka.createProducer();
  try {
    // Recorded first: a skip that then fails leaves a record too many, never a skip unrecorded.
    await producer.connect();
    await producer.send(deps.deadLetterTopic, [
      {
        key: null,
        value: null,
        headers: {
          [DEAD_LETTER_HEADERS.sourceTopic]: topic,
          [DEAD_LETTER_HEADERS.sourcePartition]: String(partition),
          [DEAD_LETTER_HEADERS.sourceOffset]: from,
          [DEAD_LETTER_HEADERS.reason]: 'undecodable_batch',
          [DEAD_LETTER_HEADERS.detail]: `operator skipped offsets ${skippedRange(deps.plan).replace('-', ' to ')} of group ${groupId}`,
        },
      },
    ]);
    // The broker refuses while the group has members (one may have joined since the plan).
    await deps.admin.setCommittedOffset(groupId, topic, partition, toOffset);
    deps.logger.warn(
      { topic, partition, groupId, from, to: toOffset },
      'group moved past an undecodable batch',
    );
  } finally {
    await producer.disconnect().catch(() => undefined);
  }
}
