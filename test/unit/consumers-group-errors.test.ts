import kafkajs from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { replicationFor } from '../../consumers/kafka/kafkajs-client.js';
import { groupRejoinCause, isRetriable } from '../../consumers/retriable.js';

// kafkajs's typings leave out the constructors' options that its own code passes.
type Wrapper = new (e: Error, options?: { cause: Error }) => Error & { retriable: boolean };
const KafkaJSNonRetriableError = kafkajs.KafkaJSNonRetriableError as unknown as Wrapper;
const KafkaJSNumberOfRetriesExceeded = kafkajs.KafkaJSNumberOfRetriesExceeded as unknown as Wrapper;
const KafkaJSProtocolError = kafkajs.KafkaJSProtocolError as unknown as new (e: {
  type: string;
  code: number;
  retriable: boolean;
  message: string;
}) => Error & { type: string };

// What a broker restart throws at a consumer: group-protocol answers, often wrapped by kafkajs's
// retrier. These must rejoin the group, never stop the consumer and never count as a batch's
// content (which would dead-letter healthy events).

const protocol = (type: string, code: number, retriable: boolean) =>
  new KafkaJSProtocolError({ type, code, retriable, message: type });

const GROUP_ERRORS = [
  protocol('UNKNOWN_MEMBER_ID', 25, false),
  protocol('ILLEGAL_GENERATION', 22, false),
  protocol('REBALANCE_IN_PROGRESS', 27, false),
  protocol('NOT_COORDINATOR_FOR_GROUP', 16, true),
  protocol('GROUP_COORDINATOR_NOT_AVAILABLE', 15, true),
  protocol('GROUP_LOAD_IN_PROGRESS', 14, true),
  protocol('FENCED_INSTANCE_ID', 82, false),
];

describe('group-protocol errors', () => {
  it.each(GROUP_ERRORS.map((e) => [e.type, e]))('%s heals by rejoining', (_, error) => {
    expect(groupRejoinCause(error)).toBe(error);
    expect(isRetriable(error)).toBe(true);
  });

  it('is found under the wrapper of a commit refused after the session expired', () => {
    // As kafkajs's retrier throws it: "KafkaJSNonRetriableError: The coordinator is not aware of
    // this member", the protocol error only as its cause.
    const unknown = protocol('UNKNOWN_MEMBER_ID', 25, false);
    const wrapped = new KafkaJSNonRetriableError(unknown, { cause: unknown });
    expect(wrapped.retriable).toBe(false);
    expect(groupRejoinCause(wrapped)).toBe(unknown);
    expect(isRetriable(wrapped)).toBe(true);
    const twice = new KafkaJSNumberOfRetriesExceeded(wrapped, { cause: wrapped });
    expect(groupRejoinCause(twice)).toBe(unknown);
  });

  it('leaves errors a rejoin cannot heal to their own handling', () => {
    const content = new Error('Unexpected token } in JSON');
    const offsetMetadata = protocol('OFFSET_METADATA_TOO_LARGE', 12, false);
    expect(groupRejoinCause(content)).toBeNull();
    expect(isRetriable(content)).toBe(false);
    expect(groupRejoinCause(new KafkaJSNonRetriableError(offsetMetadata))).toBeNull();
    expect(isRetriable(new KafkaJSNonRetriableError(offsetMetadata))).toBe(false);
    expect(groupRejoinCause(null)).toBeNull();
    expect(groupRejoinCause('UNKNOWN_MEMBER_ID')).toBeNull();
  });

  it('stops walking a cause chain that loops', () => {
    const a: { type: string; cause?: unknown } = { type: 'X' };
    a.cause = a;
    expect(groupRejoinCause(a)).toBeNull();
  });
});

describe('topics the service creates', () => {
  it('gives topics three replicas, two in sync, where the cluster has three brokers', () => {
    expect(replicationFor(1)).toEqual({ factor: 1, minInSync: 1 });
    expect(replicationFor(2)).toEqual({ factor: 2, minInSync: 1 });
    expect(replicationFor(3)).toEqual({ factor: 3, minInSync: 2 });
    expect(replicationFor(6)).toEqual({ factor: 3, minInSync: 2 });
  });
});
