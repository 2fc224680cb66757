import {
  applicationQuotaKey,
  quotaCounterKey,
  type ReadModelKeys,
} from '../../src/read-model/keys.js';
import { defineScripts, loadScript } from '../../src/read-model/lua-scripts.js';
import { duplicateConnection, type RedisClient } from '../../src/read-model/redis-connection.js';

// Request budgets per application and window (beyond.md §6). The counter lives in Redis under
// the application's hash tag, shared by every replica; each replica leases slices of it (a
// twentieth of the budget, at most LEASE_TENTHS) and spends them locally, so one Redis round
// trip serves many requests. The next slice is leased while half of the current one is left,
// so a request waits for Redis only when a window starts or a replica spends faster than a
// round trip: with appendfsync always, every lease waits for a disk write. Precision: what a
// replica has leased and not spent when the window ends is lost, so an application may be
// refused up to one and a half slices per replica early; while Redis counts, it is never
// served beyond its budget. The remaining figure a replica reports counts other replicas'
// spending as of its last lease.

export const WINDOW_SECONDS = 60;
const WINDOW_MS = WINDOW_SECONDS * 1000;
/** 200 requests: one lease per 200 requests at most on a busy application. */
const LEASE_TENTHS = 2_000;
export const FULL_COST = 10;
export const NOT_MODIFIED_COST = 1;
/** Keys seen per process whose application is remembered; a bound, not a tuning knob. */
const MAX_KNOWN_KEYS = 100_000;

const SCRIPTS = {
  apiQuotaLease: loadScript(new URL('../lua/', import.meta.url), 'quota-lease-2.lua'),
} as const;

type QuotaRedis = RedisClient & {
  apiQuotaLease(
    settings: string,
    counter: string,
    defaultPerMinute: number,
    sliceTenths: number,
    ttlMs: number,
  ): Promise<[number, number, number]>;
};

export interface QuotaVerdict {
  readonly allowed: boolean;
  /** RateLimit-Policy as the IETF httpapi draft writes it. */
  readonly policy: string;
  /** RateLimit as the draft writes it. */
  readonly rateLimit: string;
  /** Seconds until the window ends (Retry-After of a 429). */
  readonly resetSeconds: number;
}

export interface Quotas {
  /**
   * Spends `costTenths` of the budget of the key's application (the key is known live).
   * Synchronous while the replica's leased slice lasts; a promise when it must lease.
   */
  charge(keyHash: string, costTenths: number, nowMs: number): QuotaVerdict | Promise<QuotaVerdict>;
  /** Resolves once the leases in flight now have been applied. */
  settled(): Promise<void>;
  close(): Promise<void>;
}

interface CachedVerdict extends QuotaVerdict {
  readonly remaining: number;
  readonly limitTenths: number;
}

interface Budget {
  window: number;
  limitTenths: number;
  usedTenths: number;
  localTenths: number;
  /** The last slice granted: the next is leased once less than half of it is left. */
  sliceTenths: number;
  exhausted: boolean;
  lease: Promise<void> | null;
  /** The last verdict given: reused while it reads the same (no strings built per request). */
  last: CachedVerdict | null;
}

export function createQuotas(deps: {
  redis: RedisClient;
  keys: ReadModelKeys;
  requestsPerMinute: number;
  /** Called with the application of each request refused (429): who is over budget. */
  refused?: (application: number) => void;
}): Quotas {
  const { redis } = deps;
  // Leases are the API's only writes: on a connection of their own, since Redis holds a
  // connection's every later command behind a write it paused (CLIENT PAUSE WRITE, a failover),
  // whatever the client's timeout said.
  const leases = duplicateConnection(redis, { enableOfflineQueue: true }) as QuotaRedis;
  leases.on('error', () => undefined);
  defineScripts(leases, SCRIPTS);
  const { keys } = deps;
  // A key's application never changes (a new key hash comes with any re-creation).
  const appOfKey = new Map<string, number>();
  const budgets = new Map<number, Budget>();

  async function applicationOf(keyHash: string): Promise<number> {
    const known = appOfKey.get(keyHash);
    if (known !== undefined) return known;
    const app = Number(await redis.hget(keys.keyStatus(keyHash), 'app'));
    if (appOfKey.size >= MAX_KNOWN_KEYS) appOfKey.clear();
    appOfKey.set(keyHash, app);
    return app;
  }

  function budgetOf(app: number, window: number): Budget {
    let budget = budgets.get(app);
    if (budget === undefined || budget.window !== window) {
      budget = {
        window,
        limitTenths: deps.requestsPerMinute * 10,
        usedTenths: 0,
        localTenths: 0,
        sliceTenths: 0,
        exhausted: false,
        lease: null,
        last: null,
      };
      budgets.set(app, budget);
    }
    return budget;
  }

  async function lease(app: number, budget: Budget, nowMs: number): Promise<void> {
    const ttlMs = (budget.window + 1) * WINDOW_MS - nowMs + 5_000;
    let granted: number;
    let limit: number;
    let used: number;
    try {
      [granted, limit, used] = await leases.apiQuotaLease(
        applicationQuotaKey(keys, app),
        quotaCounterKey(keys, app, budget.window),
        deps.requestsPerMinute,
        LEASE_TENTHS,
        ttlMs,
      );
    } catch {
      // Redis cannot count (writes paused by a failover, or gone): this replica counts alone
      // against what is left of the budget as it last knew it, rather than refuse reads Redis
      // still serves. So a failover lets an application spend at most one budget per replica.
      limit = budget.limitTenths;
      used = budget.limitTenths;
      granted = Math.max(0, budget.limitTenths - budget.usedTenths);
    }
    budget.limitTenths = limit;
    budget.usedTenths = used;
    budget.localTenths += granted;
    if (granted === 0) budget.exhausted = true;
    else budget.sliceTenths = granted;
  }

  function verdict(budget: Budget, allowed: boolean, nowMs: number): QuotaVerdict {
    const resetSeconds = Math.max(1, Math.ceil(((budget.window + 1) * WINDOW_MS - nowMs) / 1000));
    const remaining = Math.floor(
      Math.max(0, budget.limitTenths - budget.usedTenths + budget.localTenths) / 10,
    );
    // Most answers in a second read alike: the same object then, no header strings built.
    const last = budget.last;
    if (
      last !== null &&
      last.allowed === allowed &&
      last.resetSeconds === resetSeconds &&
      last.remaining === remaining &&
      last.limitTenths === budget.limitTenths
    ) {
      return last;
    }
    const made: CachedVerdict = {
      allowed,
      resetSeconds,
      remaining,
      limitTenths: budget.limitTenths,
      // `r` moves with every answer, the policy only with the budget: the same string then.
      policy:
        last !== null && last.limitTenths === budget.limitTenths
          ? last.policy
          : `"default";q=${budget.limitTenths / 10};w=${WINDOW_SECONDS}`,
      rateLimit: `"default";r=${remaining};t=${resetSeconds}`,
    };
    budget.last = made;
    return made;
  }

  function spend(app: number, budget: Budget, costTenths: number, nowMs: number): QuotaVerdict {
    if (budget.localTenths < costTenths) {
      deps.refused?.(app);
      return verdict(budget, false, nowMs);
    }
    budget.localTenths -= costTenths;
    const answer = verdict(budget, true, nowMs);
    if (budget.localTenths * 2 < budget.sliceTenths && !budget.exhausted && budget.lease === null)
      // Ahead of need: a failure is met again, and answered, by the request that needs the slice.
      startLease(app, budget, nowMs).catch(() => undefined);
    return answer;
  }

  /** One lease in flight per application: concurrent requests wait on the same one. */
  function startLease(app: number, budget: Budget, nowMs: number): Promise<void> {
    budget.lease ??= lease(app, budget, nowMs).finally(() => {
      budget.lease = null;
    });
    return budget.lease;
  }

  async function chargeLeasing(keyHash: string, costTenths: number, nowMs: number) {
    const app = await applicationOf(keyHash);
    const window = Math.floor(nowMs / WINDOW_MS);
    const budget = budgetOf(app, window);
    while (budget.localTenths < costTenths && !budget.exhausted)
      await startLease(app, budget, nowMs);
    return spend(app, budget, costTenths, nowMs);
  }

  return {
    charge(keyHash, costTenths, nowMs) {
      const app = appOfKey.get(keyHash);
      const budget = app === undefined ? undefined : budgets.get(app);
      if (
        app !== undefined &&
        budget !== undefined &&
        budget.window === Math.floor(nowMs / WINDOW_MS) &&
        (budget.localTenths >= costTenths || budget.exhausted)
      ) {
        return spend(app, budget, costTenths, nowMs);
      }
      return chargeLeasing(keyHash, costTenths, nowMs);
    },
    async settled() {
      await Promise.all([...budgets.values()].map((b) => b.lease?.catch(() => undefined)));
    },
    async close() {
      await this.settled();
      await leases.quit().catch(() => leases.disconnect());
    },
  };
}
