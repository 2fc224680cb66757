import { DEAD_LETTER_HEADERS, type RejectReason } from '../src/domain/dead-letter.js';
import type { KafkaMessage, Producer } from './kafka/client.js';

// Rejected messages go to the dead-letter topic with their original key and bytes, and headers
// naming where they came from and why.

export interface Rejection {
  readonly message: KafkaMessage;
  readonly reason: RejectReason;
  readonly detail: string;
}

const MAX_DETAIL_BYTES = 500; // docs/events.md promises at most 500 characters

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

export interface DeadLetterWriter {
  send(rejections: readonly Rejection[]): Promise<void>;
}

export function createDeadLetterWriter(deps: {
  producer: Producer;
  topic: string;
}): DeadLetterWriter {
  return {
    async send(rejections) {
      if (rejections.length === 0) return;
      await deps.producer.send(
        deps.topic,
        rejections.map((r) => ({
          key: r.message.key,
          value: r.message.value,
          headers: deadLetterHeaders(r),
        })),
      );
    },
  };
}
