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
  /** Data age: the latest `lastUpdated` over all flows (each flow's own is in its `data`). */
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
  let lastModified: Date | null = null;
  let notModified = 0;
  // Chunks are disjoint ranges in ascending order: concatenated, both lists stay ascending.
  for (const answer of answers) {
    flows.push(...answer.body.flows);
    notFound.push(...answer.body.notFound);
    if (answer.lastModified && (!lastModified || answer.lastModified > lastModified)) {
      lastModified = answer.lastModified;
    }
    if (answer.notModified) notModified++;
  }
  return {
    flows,
    notFound,
    lastModified,
    requests: chunks.length,
    notModified,
    rateLimit: transport.rateLimit(),
  };
}

function readChunk(transport: Transport, ids: number[], signal: AbortSignal, deadline: Deadline) {
  return transport.read<BulkEnergyFlowResponse>(
    `/getInstallationsCurrentEnergyFlow?installationIds=${ids.join(',')}`,
    { signal },
    deadline,
  );
}
