import { isStoreUnavailable } from '../src/read-model/store-errors.js';

// Which failures are worth waiting out (style.md #4). Retriable: the store or the broker is
// unreachable, slow or busy, or writers contended; retrying the same batch later can succeed.
// A group-protocol answer (the member or its generation is unknown, the coordinator moved) is
// healed by rejoining the group, never by the batch's content: the client rejoins and replays.
// Everything else is a property of the batch itself: retrying it forever would stall the
// partition, so the runner isolates the message that causes it and dead-letters it.

// Kafka group-protocol errors that joining the group afresh heals. kafkajs flags several as not
// retriable and, once its retrier wrapped one (a commit after the session expired), crashes the
// consumer for good: the cause chain is where the type is still known.
const GROUP_REJOIN_TYPES = new Set([
  'UNKNOWN_MEMBER_ID',
  'ILLEGAL_GENERATION',
  'REBALANCE_IN_PROGRESS',
  'NOT_COORDINATOR_FOR_GROUP',
  'GROUP_COORDINATOR_NOT_AVAILABLE',
  'GROUP_LOAD_IN_PROGRESS',
  'FENCED_INSTANCE_ID',
]);

/** The group-protocol error in `error` or its causes that a rejoin heals, or null. */
export function groupRejoinCause(error: unknown): Error | null {
  let cause: unknown = error;
  for (let depth = 0; depth < 10 && typeof cause === 'object' && cause !== null; depth++) {
    const { type } = cause as { type?: unknown };
    if (typeof type === 'string' && GROUP_REJOIN_TYPES.has(type)) return cause as Error;
    cause = (cause as { cause?: unknown }).cause;
  }
  return null;
}

/** Writers kept changing an installation under a batch's attempts: a later try can succeed. */
export class ContentionError extends Error {
  readonly retriable = true;
}

export function isRetriable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  if (groupRejoinCause(error)) return true;
  const e = error as { retriable?: unknown };
  // ContentionError, BatchAbandonedError and kafkajs errors carry the flag themselves.
  if (e.retriable === true) return true;
  return isStoreUnavailable(error);
}
