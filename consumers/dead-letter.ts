import {
  DEAD_LETTER_HEADERS,
  REPLAY_HEADERS,
  type RejectReason,
} from '../src/domain/dead-letter.js';
import type { KafkaMessage, OutgoingMessage, Producer } from './kafka/client.js';
import { isRetriable } from './retriable.js';

// Rejected messages go to the dead-letter topic with their original key and bytes, and headers
// naming where they came from and why. A message too large to forward goes with headers only.

export interface Rejection {
  readonly message: KafkaMessage;
  readonly reason: RejectReason;
  readonly detail: string;
}

const MAX_DETAIL_BYTES = 500; // docs/events.md promises at most 500 characters
/** Below the broker's default 1 MiB message limit, with room for the record's own overhead. */
export const MAX_FORWARD_BYTES = 900 * 1024;

export function deadLetterHeaders(rejection: Rejection): Record<string, string> {
  const { message, reason, detail } = rejection;
  const original = Object.fromEntries(
    Object.entries(message.headers)
      .filter((entry): entry is [string, Buffer] => entry[1] !== undefined)
      .filter(([name]) => !Object.values<string>(DEAD_LETTER_HEADERS).includes(name))
      .map(([name, value]) => [name, value.toString('utf8')]),
  );
  return {
    ...original,
    ...sourceHeaders(message, reason, detail),
  };
}

function sourceHeaders(
  message: KafkaMessage,
  reason: RejectReason,
  detail: string,
): Record<string, string> {
  return {
    [DEAD_LETTER_HEADERS.sourceTopic]: message.topic,
    [DEAD_LETTER_HEADERS.sourcePartition]: String(message.partition),
    [DEAD_LETTER_HEADERS.sourceOffset]: message.offset,
    [DEAD_LETTER_HEADERS.reason]: reason,
    [DEAD_LETTER_HEADERS.detail]: truncate(detail, MAX_DETAIL_BYTES),
  };
}

function truncate(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  return `${bytes
    .subarray(0, maxBytes - 3)
    .toString('utf8')
    .replace(/\uFFFD$/, '')}…`;
}

const headerBytes = (headers: Record<string, string>) =>
  Object.entries(headers).reduce(
    (sum, [name, value]) => sum + Buffer.byteLength(name) + Buffer.byteLength(value),
    0,
  );

export interface DeadLetterRecord {
  readonly outgoing: OutgoingMessage;
  /** The reason it carries: the rejection's own, or `too_large` when sent without its value. */
  readonly reason: RejectReason;
}

/**
 * The record for one rejection. When value and headers together exceed MAX_FORWARD_BYTES, the
 * value and the original headers stay behind (the source coordinates find them) and the reason
 * becomes `too_large`, naming the original reason in the detail.
 */
export function deadLetterRecord(rejection: Rejection): DeadLetterRecord {
  const { message } = rejection;
  const headers = deadLetterHeaders(rejection);
  const size = (message.key?.length ?? 0) + (message.value?.length ?? 0) + headerBytes(headers);
  if (size <= MAX_FORWARD_BYTES) {
    return {
      outgoing: { key: message.key, value: message.value, headers },
      reason: rejection.reason,
    };
  }
  return tooLarge(rejection, size);
}

function tooLarge(rejection: Rejection, size: number | null): DeadLetterRecord {
  const { message } = rejection;
  const why = size === null ? 'refused by the broker' : `${size} bytes with headers`;
  const detail = `${why}; was ${rejection.reason}: ${rejection.detail}`;
  // The replay marker stays even here: a replay that fails again must show its count.
  const headers = { ...replayHeaders(message), ...sourceHeaders(message, 'too_large', detail) };
  const key =
    (message.key?.length ?? 0) + headerBytes(headers) <= MAX_FORWARD_BYTES ? message.key : null;
  return { outgoing: { key, value: null, headers }, reason: 'too_large' };
}

function replayHeaders(message: KafkaMessage): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of Object.values(REPLAY_HEADERS)) {
    const value = message.headers[name];
    if (value !== undefined) kept[name] = value.toString('utf8');
  }
  return kept;
}

export interface DeadLetterWriter {
  /** Sends every rejection; returns the reason each one went with, in order. */
  send(rejections: readonly Rejection[]): Promise<readonly RejectReason[]>;
}

export function createDeadLetterWriter(deps: {
  producer: Producer;
  topic: string;
}): DeadLetterWriter {
  const { producer, topic } = deps;
  return {
    async send(rejections) {
      if (rejections.length === 0) return [];
      const records = rejections.map(deadLetterRecord);
      try {
        await producer.send(
          topic,
          records.map((r) => r.outgoing),
        );
        return records.map((r) => r.reason);
      } catch (error) {
        if (isRetriable(error)) throw error;
      }
      // The broker refused the request for good (e.g. a limit lower than ours): send one by one,
      // and whatever it still refuses goes as headers only, so nothing stalls the partition.
      const reasons: RejectReason[] = [];
      for (const [i, record] of records.entries()) {
        try {
          await producer.send(topic, [record.outgoing]);
          reasons.push(record.reason);
        } catch (error) {
          if (isRetriable(error)) throw error;
          const fallback = tooLarge(rejections[i] as Rejection, null);
          await producer.send(topic, [fallback.outgoing]);
          reasons.push(fallback.reason);
        }
      }
      return reasons;
    },
  };
}
