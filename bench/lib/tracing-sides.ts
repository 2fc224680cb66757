import { createServer } from 'node:http';

// The sides bench/cases/tracing-cost.ts compares: tracing off, on at 1 % and on at 100 %
// (parent-based trace-id ratio, exporting over OTLP/HTTP to a sink in the bench process that
// discards what it gets), all from the "now" checkout, and with `--pre` the build without any
// tracing code. A checkout is a directory inside this repository (`git worktree add DIR
// <commit>`, node_modules symlinked in), so its imports resolve and only its sources differ.

/** One side: the environment its processes get and the checkout their sources come from. */
export interface Side {
  readonly env: Readonly<Record<string, string>>;
  readonly dir: string;
}

/** An OTLP/HTTP collector stand-in that answers every export and keeps nothing. */
export async function spanSink(): Promise<{ endpoint: string; close(): void }> {
  const sink = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(sink.address() as { port: number }).port}`,
    close: () => sink.close(),
  };
}

/** off, on1 (1 %), on100 and, given `pre`, pre: the order sides are listed and run in. */
export function tracingSides(
  endpoint: string,
  now: string,
  pre: string | null,
  opts: { exportByBatchOnly?: boolean } = {},
): Record<string, Side> {
  const traced = (ratio: string) => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: ratio,
    // Counted, a process runs some 50x slower: the exporter's 5 s timer would fire 50x as
    // often per request, each export a few spans, its fixed cost counted as the requests'.
    // Exports then go by full batches of 512 spans, as they do at full speed under load.
    ...(opts.exportByBatchOnly ? { OTEL_BSP_SCHEDULE_DELAY: '3600000' } : {}),
  });
  return {
    off: { env: {}, dir: now },
    on1: { env: traced('0.01'), dir: now },
    on100: { env: traced('1'), dir: now },
    ...(pre === null ? {} : { pre: { env: {}, dir: pre } }),
  };
}

/** `names` rotated by `round`, so no side always goes first. */
export const rotated = (names: readonly string[], round: number): string[] =>
  names.map((_, i) => names[(i + round) % names.length] as string);
