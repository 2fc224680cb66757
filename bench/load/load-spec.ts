import { readFileSync } from 'node:fs';

// What a load generator child is told: where to send, which endpoint, over which pairs.

export type Endpoint =
  | 'getInstallations'
  | 'getInstallationDevices'
  | 'getInstallationCurrentEnergyFlow';

export interface LoadSpec {
  readonly origin: string;
  readonly basePath: string;
  readonly endpoint: Endpoint;
  readonly pairsFile: string;
  readonly connections: number;
  readonly durationS: number;
  /** Open loop only: requests per second, scheduled at fixed intervals. */
  readonly rate?: number;
  /** Closed loop: which pair each request takes (default `uniform`). */
  readonly pattern?: Pattern;
}

/**
 * `uniform`: a random pair each time; `round-robin`: the pairs in turn, the whole list over
 * and over (an LRU's worst case); `zipf`: the i-th pair with probability ∝ 1/i^0.99 (a hot set).
 */
export type Pattern = 'uniform' | 'round-robin' | 'zipf';

/** A picker of pair indexes by `pattern`. */
export function pairPicker(pattern: Pattern, count: number): () => number {
  if (pattern === 'round-robin') {
    let next = 0;
    return () => next++ % count;
  }
  if (pattern === 'uniform') return () => Math.floor(Math.random() * count);
  // Zipf: a cumulative table once, then a binary search per pick.
  const cumulative = new Float64Array(count);
  let total = 0;
  for (let i = 0; i < count; i++) {
    total += 1 / (i + 1) ** 0.99;
    cumulative[i] = total;
  }
  return () => {
    const u = Math.random() * total;
    let lo = 0;
    let hi = count - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((cumulative[mid] as number) < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

export interface LoadResult {
  readonly requests: number;
  readonly durationS: number;
  readonly rps: number;
  readonly non2xx: number;
  readonly errors: number;
  /** ms */
  readonly p50: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  /** Open loop only: requests still unanswered 10 s after the schedule ended. */
  readonly backlog?: number;
  /** CPU seconds the generator itself used (it has exited before its parent could read /proc). */
  readonly cpuSeconds: number;
}

export type Pair = readonly [apiKey: string, installationId: number];

export function readSpec(path: string): { spec: LoadSpec; pairs: Pair[] } {
  const spec = JSON.parse(readFileSync(path, 'utf8')) as LoadSpec;
  const pairs = JSON.parse(readFileSync(spec.pairsFile, 'utf8')) as Pair[];
  return { spec, pairs };
}

/** The request path of one pair; getInstallations is spread over the keys. */
export function pathOf(spec: LoadSpec, pair: Pair): string {
  return spec.endpoint === 'getInstallations'
    ? `${spec.basePath}/getInstallations`
    : `${spec.basePath}/${spec.endpoint}?installationId=${pair[1]}`;
}
