import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchContext } from '../lib/context.js';
import { ROOT } from '../lib/processes.js';
import { printRow, type Row } from '../lib/report.js';
import { spread } from '../lib/stats.js';

// The consumer process beside a lean reference projector of the same contract (issue 26): the
// instrument in ../shared/ingest-ref (INGEST_REF_DIR to point elsewhere), when present, runs
// both on one topic in the same run, alternating, on its own stack and ports, after checking
// that both write the same bytes. Both traffic shapes: mostly first reports (a rebuild-like
// load) and bench-like live updates. What it measures and how: its README.md.

/** The reference the targets name: claims, loads and announces like the project. */
const VARIANT = 'lua+index+load+pub';
export const REFERENCE_NAME = `lean-${VARIANT}`;

const SHAPES = [
  { name: 'full', env: { MIX: 'full' } },
  { name: 'live', env: { MIX: 'live', INSTALLATIONS: '2000', DEVICES_MAX: '20' } },
] as const;

interface RunFile {
  readonly name: string;
  readonly total: number;
  readonly rate: number;
  readonly cpuUsPerEvent: number;
  readonly redisCmdsPerEvent: number;
  readonly metrics: Record<string, number> | null;
}

export function referenceDir(): string | null {
  const dir = process.env.INGEST_REF_DIR ?? join(ROOT, '..', 'shared', 'ingest-ref');
  return existsSync(join(dir, 'compare.sh')) ? dir : null;
}

export async function ingestReference(ctx: BenchContext): Promise<void> {
  const dir = referenceDir();
  if (dir === null) {
    ctx.notes.push('ingest reference: ../shared/ingest-ref not present (INGEST_REF_DIR), skipped');
    return;
  }
  for (const shape of SHAPES) {
    const stateDir = join(ctx.dir, `ingest-ref-${shape.name}`);
    mkdirSync(stateDir, { recursive: true });
    await compare(dir, stateDir, {
      ...shape.env,
      EVENTS: String(ctx.opts.quick ? 50_000 : 300_000),
      ALTERNATIONS: String(ctx.opts.alternations),
      LEAN_VARIANTS: VARIANT,
    });
    for (const row of rowsOf(shape.name, readRuns(stateDir))) {
      ctx.rows.push(row);
      printRow(row);
    }
  }
}

/**
 * The checkout measured: this one, or (a git worktree, which the instrument does not take for a
 * checkout) a clone of its HEAD that the instrument makes and builds: committed code only.
 */
function projectDir(stateDir: string): string {
  return statSync(join(ROOT, '.git')).isDirectory() ? ROOT : join(stateDir, 'project');
}

/**
 * This environment less npm's configuration, which `npm run` and `npx` hand to their children
 * as npm_config_* variables: the instrument installs its own packages, under its own rules
 * (this project's strict-allow-scripts would refuse its esbuild).
 */
function ownEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_config_')),
  );
}

function compare(dir: string, stateDir: string, env: Record<string, string>): Promise<void> {
  const log = join(stateDir, 'compare.log');
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', `bash "${dir}/compare.sh" > "${log}" 2>&1`], {
      cwd: ROOT,
      env: { ...ownEnv(), ...env, STATE_DIR: stateDir, PROJECT_DIR: projectDir(stateDir) },
      stdio: 'ignore',
    });
    child.once('error', reject);
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`ingest-ref compare.sh failed (${code}): ${log}`)),
    );
  });
}

function readRuns(stateDir: string): RunFile[] {
  const runs = join(stateDir, 'runs');
  const latest = readdirSync(runs)
    .filter((d) => d.startsWith('compare-'))
    .sort()
    .at(-1);
  if (!latest) throw new Error(`no compare run in ${runs}`);
  return readdirSync(join(runs, latest))
    .filter((f) => /^[a-z+-]+-\d+\.json$/.test(f))
    .map((f) => JSON.parse(readFileSync(join(runs, latest, f), 'utf8')) as RunFile)
    .filter((r) => typeof r.rate === 'number');
}

const GC_METRIC = 'ingest_gc_pause_seconds_total';

function rowsOf(shape: string, runs: readonly RunFile[]): Row[] {
  const of = (name: string) => runs.filter((r) => r.name === name);
  const project = of('project');
  const reference = of(REFERENCE_NAME);
  const section = `ingest vs reference, ${shape} traffic`;
  const pair = (pick: (r: RunFile) => number) => ({
    candidate: spread(project.map(pick)),
    baseline: spread(reference.map(pick)),
  });
  const rate = pair((r) => r.rate);
  const cpu = pair((r) => r.cpuUsPerEvent);
  const cmds = pair((r) => r.redisCmdsPerEvent);
  // Whole life of the process over the topic's events: start-up's collections included.
  const gc = spread(project.map((r) => ((r.metrics?.[GC_METRIC] ?? Number.NaN) * 1e6) / r.total));
  const note = `baseline: ${REFERENCE_NAME} (../shared/ingest-ref, same topic, same run, alternating)`;
  return [
    {
      section,
      name: 'events/s',
      unit: 'events/s',
      ...rate,
      ratio: rate.candidate.median / rate.baseline.median,
      target: '>= 0.8x',
      note,
    },
    {
      section,
      name: 'consumer CPU per event',
      unit: 'µs',
      ...cpu,
      ratio: cpu.candidate.median / cpu.baseline.median,
      target: '<= 1.25x',
      note,
    },
    {
      section,
      name: 'GC pauses per event (main thread, whole life)',
      unit: 'µs',
      candidate: gc,
      target: '<= 10',
    },
    {
      section,
      name: 'Redis commands per event',
      unit: 'commands',
      ...cmds,
      ratio: cmds.candidate.median / cmds.baseline.median,
      target: '<= 1x',
      note,
    },
  ];
}
