import type { Deadline, Transport } from './transport.js';
import type {
  BulkEnergyFlowResponse,
  CallOptions,
  InstallationFlow,
  RateLimitState,
} from './types.js';

// The bulk energy flow (docs/api.md "Bulk energy flow") for any number of installations: ids
// deduplicated and sorted, then in chunks of at most 100, so that the same set of ids asks the
// same requests every poll and each chunk's ETag turns an unchanged chunk into a 304.

/** The bulk endpoint takes at most this many ids per request. */
export const BULK_CHUNK_SIZE = 100;

export interface BulkOptions extends CallOptions {
  /** Chunks in flight at once. */
  readonly concurrency?: number;
}

export interface BulkEnergyFlowResult {
  /** The flows of the installations the key may read, by ascending id. */
  readonly flows: InstallationFlow[];
  /** The ids that do not exist or are not accessible, ascending. */
  readonly notFound: number[];
  /**
   * Data age of the stalest installation: the earliest `data.lastUpdated` over the flows that
   * have data. Compare it with now: one stale installation makes it old, whatever the others.
   */
  readonly oldestLastModified: Date | null;
  /** Data age of the freshest installation: the latest `data.lastUpdated` over the flows. */
  readonly newestLastModified: Date | null;
  /**
   * The ids whose flow is `data: null` (no device online), ascending: they have no data age,
   * so they count in neither `oldestLastModified` nor `newestLastModified`.
   */
  readonly offline: number[];
  /**
   * The latest `data.lastUpdated` over the flows, as in 1.0.0: `newestLastModified`.
   * @deprecated One live installation makes it fresh however stale the others are: read
   * `oldestLastModified` (and `offline`) to tell whether any is stale.
   */
  readonly lastModified: Date | null;
  /** Requests made, one per chunk. */
  readonly requests: number;
  /** Of those, the ones answered 304 (their flows came from the cache). */
  readonly notModified: number;
  readonly rateLimit: RateLimitState | null;
}

/** Sorted distinct ids in chunks of at most `size`. */
export function chunkIds(ids: Iterable<number>, size = BULK_CHUNK_SIZE): number[][] {
  const sorted = [...new Set(ids)].sort((a, b) => a - b);
  for (const id of sorted) {
    if (!Number.isSafeInteger(id)) throw new RangeError(`not an installation id: ${id}`);
  }
  const chunks: number[][] = [];
  for (let i = 0; i < sorted.length; i += size) chunks.push(sorted.slice(i, i + size));
  return chunks;
}

export async function getEnergyFlows(
  transport: Transport,
  ids: Iterable<number>,
  options: BulkOptions = {},
): Promise<BulkEnergyFlowResult> {
  const chunks = chunkIds(ids);
  const answers = new Array<Awaited<ReturnType<typeof readChunk>>>(chunks.length);
  // One deadline for the whole call; the first failure stops the rest (no quota spent on
  // answers that would be thrown away): no new chunk starts, requests in flight are aborted.
  const deadline = transport.deadline(options);
  const stop = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, stop.signal]) : stop.signal;
  let next = 0;
  const worker = async () => {
    while (!signal.aborted && next < chunks.length) {
      const i = next++;
      try {
        answers[i] = await readChunk(transport, chunks[i] as number[], signal, deadline);
      } catch (error) {
        stop.abort(error); // the first failure is the reason; later ones change nothing
      }
    }
  };
  const concurrency = Math.max(1, Math.min(options.concurrency ?? 4, chunks.length));
  await Promise.all(Array.from({ length: concurrency }, worker));
  signal.throwIfAborted();
  const flows: InstallationFlow[] = [];
  const notFound: number[] = [];
  let notModified = 0;
  // Chunks are disjoint ranges in ascending order: concatenated, both lists stay ascending.
  for (const answer of answers) {
    flows.push(...answer.body.flows);
    notFound.push(...answer.body.notFound);
    if (answer.notModified) notModified++;
  }
  const age = dataAge(flows);
  return {
    flows,
    notFound,
    ...age,
    lastModified: age.newestLastModified,
    requests: chunks.length,
    notModified,
    rateLimit: transport.rateLimit(),
  };
}

/**
 * The oldest and newest `lastUpdated` of the flows, and the flows without data. Taken from the
 * bodies, not from each chunk's `Last-Modified`: that is the newest of its chunk only, and
 * cannot tell the oldest.
 */
export function dataAge(
  flows: readonly InstallationFlow[],
): Pick<BulkEnergyFlowResult, 'oldestLastModified' | 'newestLastModified' | 'offline'> {
  let oldestMs = Number.POSITIVE_INFINITY;
  let newestMs = Number.NEGATIVE_INFINITY;
  const offline: number[] = [];
  for (const { installationId, data } of flows) {
    if (data === null) {
      offline.push(installationId);
      continue;
    }
    const ms = Date.parse(data.lastUpdated);
    oldestMs = Math.min(oldestMs, ms);
    newestMs = Math.max(newestMs, ms);
  }
  // No flow with data leaves both at their infinities; an unreadable date (NaN) wins both, as
  // an unknown age should not pass for a known one.
  const dated = offline.length < flows.length;
  return {
    oldestLastModified: dated ? new Date(oldestMs) : null,
    newestLastModified: dated ? new Date(newestMs) : null,
    offline,
  };
}

function readChunk(transport: Transport, ids: number[], signal: AbortSignal, deadline: Deadline) {
  return transport.read<BulkEnergyFlowResponse>(
    `/getInstallationsCurrentEnergyFlow?installationIds=${ids.join(',')}`,
    { signal },
    deadline,
  );
}
