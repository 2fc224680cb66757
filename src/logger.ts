import { type Logger, pino } from 'pino';

// Keys must never reach a log line, whichever header carried them.
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["api-key"]',
  'headers.authorization',
  'headers["api-key"]',
];

export function createLogger(options: { level: string; name: string }): Logger {
  return pino({
    name: options.name,
    level: options.level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  });
}
