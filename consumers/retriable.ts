// Which failures are worth waiting out (style.md #4). Retriable: the store or the broker is
// unreachable, slow or busy, or writers contended; retrying the same batch later can succeed.
// Everything else is a property of the batch itself: retrying it forever would stall the
// partition, so the runner isolates the message that causes it and dead-letters it.

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ECONNABORTED',
]);

// ioredis errors raised while the connection is down or was lost mid-command.
const IOREDIS_CONNECTION_NAMES = new Set([
  'MaxRetriesPerRequestError',
  'AbortError',
  'InterruptError',
]);
const IOREDIS_CONNECTION_MESSAGES = [
  'Connection is closed',
  "Stream isn't writeable",
  'Command timed out',
  'Reached the max retries per request limit',
];

// Redis replies that describe the server's state, not the command: loading, busy, fail-over.
const TRANSIENT_REPLY_PREFIXES = [
  'LOADING',
  'BUSY',
  'TRYAGAIN',
  'CLUSTERDOWN',
  'MASTERDOWN',
  'READONLY',
  'NOREPLICAS',
  'OOM',
];

export function isRetriable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { retriable?: unknown; name?: unknown; code?: unknown; message?: unknown };
  // ContentionError, BatchAbandonedError and kafkajs errors carry the flag themselves.
  if (e.retriable === true) return true;
  if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return true;
  if (typeof e.name === 'string' && IOREDIS_CONNECTION_NAMES.has(e.name)) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  if (IOREDIS_CONNECTION_MESSAGES.some((m) => message.includes(m))) return true;
  return e.name === 'ReplyError' && TRANSIENT_REPLY_PREFIXES.some((p) => message.startsWith(p));
}
