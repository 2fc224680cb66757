// Which store failures say "Redis cannot answer now" rather than "this command is wrong": the
// store is unreachable, slow or busy, or failing over. Both roles ask it: the consumers retry the
// batch instead of dead-lettering it (consumers/retriable.ts), the API adds Retry-After to the
// 500 it answers (api/routes/route-context.ts). A script error, a wrong type or bad stored bytes
// are none of these: trying again cannot help.

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

/** Redis down, unreachable, too slow or in a transient state: a later try can succeed. */
export function isStoreUnavailable(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false;
  const e = error as { name?: unknown; code?: unknown; message?: unknown };
  if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return true;
  if (typeof e.name === 'string' && IOREDIS_CONNECTION_NAMES.has(e.name)) return true;
  const message = typeof e.message === 'string' ? e.message : '';
  if (IOREDIS_CONNECTION_MESSAGES.some((m) => message.includes(m))) return true;
  return e.name === 'ReplyError' && TRANSIENT_REPLY_PREFIXES.some((p) => message.startsWith(p));
}
