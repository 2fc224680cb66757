import { type BulkEnergyFlowResult, type BulkOptions, getEnergyFlows } from './bulk.js';
import { type CacheLimits, DEFAULT_CACHE_LIMITS, EtagCache } from './etag-cache.js';
import { type EnergyFlowEvent, type StreamOptions, streamEnergyFlow } from './flow-stream.js';
import { createTransport, type RetryOptions } from './transport.js';
import type {
  ApiResult,
  CallOptions,
  EnergyFlowResponse,
  Installation,
  InstallationDevicesResponse,
  InstallationsResponse,
  RateLimitState,
} from './types.js';

export interface ClientOptions {
  /** The API's base, path prefix included: `https://host/application/v1`. */
  readonly baseUrl: string;
  /** The application's API key (`itk_…`), sent as `Api-Key`. */
  readonly apiKey: string;
  /** Deadline of one call, retries and waits included, ms. Default 30 s. */
  readonly timeoutMs?: number;
  /** Retries of reads. Default 4 attempts, backoff from 200 ms up to 10 s. */
  readonly retry?: Partial<RetryOptions>;
  /** Conditional-request cache limits, or false for none. */
  readonly cache?: Partial<CacheLimits> | false;
  /** Space requests by the RateLimit headers so no 429 comes in steady state. Default on. */
  readonly pacing?: boolean;
  /** The fetch to use; the platform's by default. */
  readonly fetch?: typeof fetch;
}

export interface PageOptions extends CallOptions {
  /** Installations per page, 1 to 1,000. */
  readonly limit?: number;
  /** A previous page's `nextCursor`. */
  readonly cursor?: string;
}

export interface ReadApiClient {
  /** getInstallations: every installation the key may read, or one page of them. */
  getInstallations(options?: PageOptions): Promise<ApiResult<InstallationsResponse>>;
  /**
   * Every installation the key may read, page by page (`limit` per request, default 1,000).
   * `timeoutMs` bounds the iterator's own time over all pages, not the time of the loop body.
   */
  installations(options?: PageOptions): AsyncGenerator<Installation, void, undefined>;
  /** getInstallationDevices: the last-known state of the installation's devices. */
  getInstallationDevices(
    installationId: number,
    options?: CallOptions,
  ): Promise<ApiResult<InstallationDevicesResponse>>;
  /** getInstallationCurrentEnergyFlow: the installation's current energy flow. */
  getEnergyFlow(
    installationId: number,
    options?: CallOptions,
  ): Promise<ApiResult<EnergyFlowResponse>>;
  /** The energy flows of any number of installations, 100 per bulk request. */
  getEnergyFlows(ids: Iterable<number>, options?: BulkOptions): Promise<BulkEnergyFlowResult>;
  /** Push: each change of the installation's energy flow, resumed across reconnects. */
  streamEnergyFlow(
    installationId: number,
    options?: StreamOptions,
  ): AsyncGenerator<EnergyFlowEvent, void, undefined>;
  /** The quota as the last answer told it; null before any answer or when quotas are off. */
  readonly rateLimit: RateLimitState | null;
  /** Forgets every cached body. */
  clearCache(): void;
}

export function createReadApiClient(options: ClientOptions): ReadApiClient {
  const doFetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const cache =
    options.cache === false ? null : new EtagCache({ ...DEFAULT_CACHE_LIMITS, ...options.cache });
  const now = () => Date.now();
  const transport = createTransport({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    fetch: doFetch,
    timeoutMs: options.timeoutMs ?? 30_000,
    retry: { maxAttempts: 4, baseDelayMs: 200, maxDelayMs: 10_000, ...options.retry },
    pacing: options.pacing ?? true,
    cache,
    now,
    random: Math.random,
  });
  const byId = (path: string, id: number) => {
    if (!Number.isSafeInteger(id)) throw new RangeError(`not an installation id: ${id}`);
    return `${path}?installationId=${id}`;
  };

  const installationsPath = (page: PageOptions) => {
    const query = new URLSearchParams();
    if (page.limit !== undefined) query.set('limit', String(page.limit));
    if (page.cursor !== undefined) query.set('cursor', page.cursor);
    return query.size > 0 ? `/getInstallations?${query}` : '/getInstallations';
  };

  return {
    getInstallations: (page = {}) =>
      transport.read<InstallationsResponse>(installationsPath(page), page),
    async *installations(page = {}) {
      // One deadline for the iterator's own time, every page with its retries and waits; the
      // time the caller's loop spends between pages is not counted against it.
      const { timeoutMs } = transport.deadline(page);
      let spentMs = 0;
      let cursor = page.cursor;
      do {
        const startedMs = now();
        const deadline = { atMs: startedMs + timeoutMs - spentMs, timeoutMs };
        const path = installationsPath({ ...page, limit: page.limit ?? 1_000, cursor });
        const { body } = await transport.read<InstallationsResponse>(path, page, deadline);
        spentMs += now() - startedMs;
        yield* body.installations;
        cursor = body.nextCursor;
      } while (cursor !== undefined);
    },
    // async: a bad id rejects the promise like every other failure, it is not thrown at the call.
    getInstallationDevices: async (id, call) =>
      transport.read(byId('/getInstallationDevices', id), call),
    getEnergyFlow: async (id, call) =>
      transport.read(byId('/getInstallationCurrentEnergyFlow', id), call),
    getEnergyFlows: (ids, call) => getEnergyFlows(transport, ids, call),
    streamEnergyFlow: (id, streamOptions) =>
      streamEnergyFlow(
        {
          baseUrl: options.baseUrl,
          apiKey: options.apiKey,
          fetch: doFetch,
          now,
          random: Math.random,
        },
        id,
        streamOptions,
      ),
    get rateLimit() {
      return transport.rateLimit();
    },
    clearCache: () => cache?.clear(),
  };
}
