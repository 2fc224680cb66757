import type { FastifyReply } from 'fastify';
import type { ReadModelKeys } from '../../src/read-model/keys.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import { sendError } from '../errors/error-catalog.js';

// Open streams per key, per application and per client, in this process (docs/security.md,
// "Streams"). A stream holds a connection for as long as the client likes, so each party gets a
// cap of its own under API_STREAMS_MAX: one key cannot hold the process's streams, nor one
// application through many keys, nor one client behind a trusted proxy (a direct client is
// already held to its connection cap). Over a cap: 429 RATE_LIMITED with the RateLimit fields
// (beyond.md §6) naming the concurrency policy that refused it, and Retry-After.

export type StreamPolicy = 'streams-per-key' | 'streams-per-application' | 'streams-per-client';

export type StreamSlot =
  | { readonly ok: true; release(): void }
  | { readonly ok: false; readonly policy: StreamPolicy; readonly quota: number };

export interface StreamLimits {
  /** The key's application (one Redis read per key, then remembered). */
  applicationOf(keyHash: string): Promise<string>;
  /** Counts one stream for each party, or names the first cap it would pass. */
  take(keyHash: string, app: string, client: string): StreamSlot;
}

/** Seconds: streams end when their clients go, which no one can predict; a short wait. */
const RETRY_AFTER_SECONDS = 5;
/** Keys whose application is remembered; a bound, not a tuning knob. */
const MAX_KNOWN_KEYS = 100_000;

export function createStreamLimits(deps: {
  redis: RedisClient;
  keys: ReadModelKeys;
  perKey: number;
  perApplication: number;
  /** 0: none (the connection cap per client is 0). */
  perClient: number;
}): StreamLimits {
  const appOfKey = new Map<string, string>();
  const counts: Record<StreamPolicy, Map<string, number>> = {
    'streams-per-key': new Map(),
    'streams-per-application': new Map(),
    'streams-per-client': new Map(),
  };
  const caps: Record<StreamPolicy, number> = {
    'streams-per-key': deps.perKey,
    'streams-per-application': deps.perApplication,
    'streams-per-client': deps.perClient,
  };
  const change = (policy: StreamPolicy, party: string, by: number) => {
    const map = counts[policy];
    const next = (map.get(party) ?? 0) + by;
    if (next <= 0) map.delete(party);
    else map.set(party, next);
  };
  return {
    async applicationOf(keyHash) {
      const known = appOfKey.get(keyHash);
      if (known !== undefined) return known;
      const app = (await deps.redis.hget(deps.keys.keyStatus(keyHash), 'app')) ?? '';
      if (appOfKey.size >= MAX_KNOWN_KEYS) appOfKey.clear();
      appOfKey.set(keyHash, app);
      return app;
    },
    take(keyHash, app, client) {
      const parties: [StreamPolicy, string][] = [
        ['streams-per-key', keyHash],
        ['streams-per-application', app],
        ['streams-per-client', client],
      ];
      for (const [policy, party] of parties) {
        const cap = caps[policy];
        if (cap > 0 && (counts[policy].get(party) ?? 0) >= cap) {
          return { ok: false, policy, quota: cap };
        }
      }
      for (const [policy, party] of parties) change(policy, party, 1);
      let released = false;
      return {
        ok: true,
        release() {
          if (released) return;
          released = true;
          for (const [policy, party] of parties) change(policy, party, -1);
        },
      };
    },
  };
}

/** 429 with the RateLimit fields of the concurrency policy that refused the stream. */
export function sendStreamLimited(
  reply: FastifyReply,
  refusal: { readonly policy: StreamPolicy; readonly quota: number },
): FastifyReply {
  return sendError(
    reply
      .header('ratelimit-policy', `"${refusal.policy}";q=${refusal.quota};qu="concurrent-requests"`)
      .header('ratelimit', `"${refusal.policy}";r=0;t=${RETRY_AFTER_SECONDS}`)
      .header('retry-after', String(RETRY_AFTER_SECONDS)),
    'RATE_LIMITED',
  );
}
