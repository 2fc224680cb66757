import type { ErrorCode } from './types.js';

// Every failure the client reports is a ReadApiError; `retriable` says whether trying the same
// call later may succeed (the client already retried what it could within the call's deadline).

export class ReadApiError extends Error {
  override readonly name: string = 'ReadApiError';
  constructor(
    message: string,
    readonly retriable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The API answered `{"valid":false,"error":code}` with HTTP `status`. */
export class ApiError extends ReadApiError {
  override readonly name: string = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    /** From `Retry-After` (429, 503), ms; null when the answer had none. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(`${status} ${code}`, status === 429 || status >= 500);
  }
}

/** Where a stream met the refusal: see RevokedError. */
export type RevokedPhase = 'open' | 'reconnect' | 'stream';

/**
 * The key may not (or no longer) read the installation's energy-flow stream. Not retriable. By
 * `phase`: `open`, the first request was refused (401 `UNAUTHORIZED`: the key is revoked,
 * expired, unknown or its application disabled; 404 `DOESNT_EXIST`: the installation is missing
 * or not granted, which the API answers alike on purpose); `reconnect`, a reconnect was refused
 * the same way after a stream had been open; `stream`, the server sent `event: revoked`.
 */
export class RevokedError extends ApiError {
  override readonly name: string = 'RevokedError';
  constructor(
    status: number,
    code: ErrorCode,
    readonly installationId: number,
    readonly phase: RevokedPhase,
  ) {
    super(status, code);
  }
}

/** The call's deadline (`timeoutMs`) passed before an answer. */
export class TimeoutError extends ReadApiError {
  override readonly name: string = 'TimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`, true);
  }
}

/** The connection failed on every attempt the call's deadline allowed. */
export class NetworkError extends ReadApiError {
  override readonly name: string = 'NetworkError';
  constructor(cause: unknown) {
    super(`connection failed: ${describe(cause)}`, true, { cause });
  }
}

/** The answer was not what the contract says (not JSON; an error without the envelope). */
export class ProtocolError extends ReadApiError {
  override readonly name: string = 'ProtocolError';
  constructor(
    message: string,
    readonly status: number,
    /** From `Retry-After`, ms; null when the answer had none. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message, status === 429 || status >= 500);
  }
}

/** True when `error` is an ApiError, of `code` when given. */
export function isApiError(error: unknown, code?: ErrorCode): error is ApiError {
  return error instanceof ApiError && (code === undefined || error.code === code);
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = (cause as { cause?: unknown }).cause;
    return inner instanceof Error ? `${cause.message} (${inner.message})` : cause.message;
  }
  return String(cause);
}
