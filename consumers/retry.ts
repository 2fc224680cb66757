import type { Logger } from 'pino';
import type { BatchContext } from './kafka/client.js';
import { isRetriable } from './retriable.js';

export interface RetryPolicy {
  readonly initialDelayMs: number;
  readonly maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { initialDelayMs: 100, maxDelayMs: 5_000 };

/** Thrown when the partition was revoked mid-retry: the batch is abandoned and not committed. */
export class BatchAbandonedError extends Error {
  readonly retriable = true;
}

/**
 * Runs `attempt` until it succeeds, backing off exponentially while its failures are retriable
 * (Redis down, Kafka unavailable, contention): nothing is committed and nothing is skipped, the
 * partition simply waits. A non-retriable failure is thrown at once, for the caller to isolate.
 */
export async function retryUntilDone<T>(
  ctx: BatchContext,
  attempt: () => Promise<T>,
  deps: { logger: Logger; policy?: RetryPolicy; onRetry?: (error: unknown) => void },
): Promise<T> {
  const policy = deps.policy ?? DEFAULT_RETRY;
  let delayMs = policy.initialDelayMs;
  for (let tries = 1; ; tries++) {
    try {
      return await attempt();
    } catch (error) {
      if (!isRetriable(error)) throw error;
      if (ctx.isStale()) throw new BatchAbandonedError('partition revoked while retrying');
      deps.onRetry?.(error);
      deps.logger.warn({ err: error, tries, delayMs }, 'batch write failed; retrying');
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      delayMs = Math.min(delayMs * 2, policy.maxDelayMs);
      await ctx.heartbeat();
    }
  }
}
