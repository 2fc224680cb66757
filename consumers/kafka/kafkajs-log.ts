import { createRequire } from 'node:module';
import { logLevel as KafkaLogLevel, type LogEntry } from 'kafkajs';
import type { Logger } from 'pino';

// kafkajs's log, forwarded to the process's logger. kafkajs logs every error answer of the
// broker at error level from its connection (`Response ListOffsets(…)` with the error), also
// those it then retries and gets past: a topic's leader not elected yet, a transaction or group
// coordinator still loading on a new broker. A successful `create-topics` or first transactional
// replay printed several such lines. Those answers, retriable by the protocol's own table, are
// logged at debug: when kafkajs gives up retrying, the call fails and its caller reports it.

// kafkajs's table of the protocol's error codes (type, code, retriable, message); not in its
// typings, so read here once. Its messages are what the connection logs as `error`.
const { errorCodes } = createRequire(import.meta.url)('kafkajs/src/protocol/error.js') as {
  errorCodes: ReadonlyArray<{ type: string; retriable: boolean; message: string }>;
};

/** The messages of the broker's retriable error answers, as kafkajs logs them. */
export const RETRIABLE_ANSWERS: ReadonlySet<string> = new Set(
  errorCodes.filter((e) => e.retriable).map((e) => e.message),
);

export type ForwardedLevel = 'error' | 'warn' | 'debug';

/** The level a kafkajs log entry is forwarded at (kafkajs logs at WARN and above here). */
export function forwardedLevel(entry: LogEntry): ForwardedLevel {
  if (entry.level > KafkaLogLevel.ERROR) return 'warn';
  const { error } = entry.log as { error?: unknown };
  const retriedAnswer =
    entry.namespace === 'Connection' &&
    entry.log.message.startsWith('Response ') &&
    typeof error === 'string' &&
    RETRIABLE_ANSWERS.has(error);
  return retriedAnswer ? 'debug' : 'error';
}

export function forwardLog(logger: Logger, entry: LogEntry): void {
  const { message, ...rest } = entry.log;
  logger[forwardedLevel(entry)]({ kafka: { namespace: entry.namespace, ...rest } }, message);
}
