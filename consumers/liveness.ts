import type { Logger } from 'pino';
import type { Admin } from './kafka/client.js';
import { UndecodableBatchError } from './kafka/codecs.js';

// What happens when a topic's consumer stops for good: readiness is already false (the runner
// says so), this logs where it stopped, loudly and once, then asks the process to exit so its
// supervisor restarts it. Nothing is skipped: a restarted process stops at the same offset
// until an operator moves the group (docs/operations.md).

export interface ConsumerFailure {
  readonly topic: string;
  readonly groupId: string;
  readonly reason: 'undecodable_batch' | 'crash' | 'group_lost' | 'read_model_lost';
  readonly error: unknown;
  /** The partitions this process had, to narrow down where it stopped. */
  readonly partitions: readonly number[];
  /** Where it stopped, when known: the partition and the first offset it cannot read. */
  readonly at?: { readonly partition: number; readonly offset: string };
}

export interface StoppedAt {
  readonly partition: number;
  /** The group's committed offset: the next record it would read. */
  readonly committed: string;
  readonly end: string;
}

/** Where each assigned partition stands, read from the broker (the process may be gone soon). */
export async function positionsOf(
  admin: Admin,
  failure: ConsumerFailure,
): Promise<readonly StoppedAt[]> {
  const [committed, ends] = await Promise.all([
    admin.committedOffsets(failure.groupId, failure.topic),
    admin.endOffsets(failure.topic),
  ]);
  return failure.partitions.map((partition) => {
    const end = ends.find((e) => e.partition === partition);
    const at = committed.find((c) => c.partition === partition)?.offset ?? end?.start ?? '0';
    return { partition, committed: at, end: end?.end ?? at };
  });
}

/**
 * The partitions whose unread range holds the undecodable batch: a fetch fails as a whole, so
 * the batch's offsets (from its header) are what tells the partitions apart.
 */
export function partitionsHolding(
  positions: readonly StoppedAt[],
  baseOffset: string,
  lastOffset: string,
): number[] {
  const base = BigInt(baseOffset);
  const last = BigInt(lastOffset);
  return positions
    .filter((p) => last >= BigInt(p.committed) && base < BigInt(p.end))
    .map((p) => p.partition);
}

export async function reportFailure(deps: {
  failure: ConsumerFailure;
  admin: Admin;
  logger: Logger;
  exitGraceMs: number;
}): Promise<void> {
  const { failure, logger } = deps;
  const { topic, groupId, reason, error } = failure;
  let positions: readonly StoppedAt[] = [];
  try {
    positions = await positionsOf(deps.admin, failure);
  } catch (lookup) {
    logger.warn({ err: lookup, topic }, 'could not read the group offsets of the failed consumer');
  }
  const undecodable = findUndecodable(error);
  const holding = failure.at
    ? [failure.at.partition]
    : undecodable?.baseOffset != null && undecodable.lastOffset != null
      ? partitionsHolding(positions, undecodable.baseOffset, undecodable.lastOffset)
      : [];
  logger.fatal(
    {
      err: error,
      topic,
      groupId,
      reason,
      ...(holding.length === 1 ? { partition: holding[0] } : {}),
      ...(holding.length > 1 ? { candidatePartitions: holding } : {}),
      ...(undecodable
        ? {
            codec: undecodable.codec,
            offset: undecodable.baseOffset,
            lastOffset: undecodable.lastOffset,
            nextOffset:
              undecodable.lastOffset === null
                ? null
                : (BigInt(undecodable.lastOffset) + 1n).toString(),
          }
        : {}),
      positions,
      exitInMs: deps.exitGraceMs,
    },
    undecodable
      ? `consumer of ${topic} stopped at an undecodable record batch: nothing after it is read ` +
          'until an operator moves the group past it (docs/operations.md, "Moving a group past ' +
          'an undecodable batch")'
      : `consumer of ${topic} stopped (${reason}); exiting so the supervisor restarts the process`,
  );
}

export function findUndecodable(error: unknown): UndecodableBatchError | null {
  let cause: unknown = error;
  while (cause instanceof Error) {
    if (cause instanceof UndecodableBatchError) return cause;
    cause = cause.cause;
  }
  return null;
}
