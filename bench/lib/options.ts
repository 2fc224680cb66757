import { existsSync } from 'node:fs';
import { join } from 'node:path';

// Run options: full (for RESULTS.md) or --quick (a ~2 minute smoke run of every case).

export interface BenchOptions {
  readonly quick: boolean;
  readonly installations: number;
  readonly caseSeconds: number;
  readonly openLoopSeconds: number;
  readonly alternations: number;
  readonly connections: number;
  readonly ingestEvents: number;
  readonly freshnessSeconds: number;
  /** Device counts of the scale cases (read model written directly). */
  readonly scaleDevices: readonly number[];
  /** The scale case's cells: seconds each, and alternations of each (`--scale-seconds 6x2,30x1`). */
  readonly scaleCells: readonly { readonly seconds: number; readonly alternations: number }[];
  readonly profile: boolean;
  /** Variants of the API (log level, auto-pipelining) against the API as run. */
  readonly experiments: boolean;
  readonly seed: number;
  /** Telemetry events the rebuild case replays into an empty read model. */
  readonly rebuildEvents: number;
  /** Phases to leave out: reads, open, ingest, mixed, java, scale-out, rebuild, startup, scale, micro, floor. */
  readonly skip: ReadonlySet<string>;
}

export function parseOptions(argv: readonly string[]): BenchOptions {
  const quick = argv.includes('--quick');
  const value = (name: string) => {
    const i = argv.indexOf(name);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const num = (name: string, fallback: number) => Number(value(name) ?? fallback);
  const caseSeconds = num('--seconds', quick ? 2 : 8);
  const alternations = num('--alternations', quick ? 1 : 3);
  return {
    quick,
    installations: num('--installations', quick ? 1_000 : 10_000),
    caseSeconds,
    openLoopSeconds: num('--open-seconds', quick ? 2 : 6),
    alternations,
    connections: num('--connections', 64),
    ingestEvents: num('--ingest-events', quick ? 10_000 : 60_000),
    freshnessSeconds: num('--freshness-seconds', quick ? 3 : 10),
    scaleDevices: (value('--scale') ?? (quick ? '1000,30000' : '1000,100000,1000000'))
      .split(',')
      .map(Number),
    scaleCells: (value('--scale-seconds') ?? `${caseSeconds}x${alternations}`)
      .split(',')
      .map((cell) => {
        const [seconds, times] = cell.split('x');
        return { seconds: Number(seconds), alternations: Number(times ?? alternations) };
      }),
    profile: argv.includes('--profile') || (!argv.includes('--no-profile') && !quick),
    experiments: argv.includes('--experiments') || (!argv.includes('--no-experiments') && !quick),
    seed: num('--seed', 42),
    rebuildEvents: num('--rebuild-events', quick ? 50_000 : 1_000_000),
    skip: new Set((value('--skip') ?? '').split(',').filter(Boolean)),
  };
}

/** A `--name value` option of a standalone case's command line; null when absent. */
export function stringArg(name: string, argv = process.argv): string | null {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? (argv[i + 1] ?? null) : null;
}

/**
 * A `--name DIR` option naming a checkout of another commit (`git worktree add DIR <commit>`
 * inside this repository, so its imports find these node_modules); null when absent, and a
 * failure at once when DIR holds no sources.
 */
export function checkoutArg(name: string, argv = process.argv): string | null {
  const dir = stringArg(name, argv);
  if (dir !== null && !existsSync(join(dir, 'api/main.ts'))) throw new Error(`${dir}: no checkout`);
  return dir;
}

/** A numeric `--name value` of a standalone case's command line (bench/cases/<case>.ts). */
export function numberArg(name: string, fallback: number, argv = process.argv): number {
  const i = argv.indexOf(`--${name}`);
  return i > 0 ? Number(argv[i + 1]) : fallback;
}
