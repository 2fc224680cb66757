import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Resvg } from '@resvg/resvg-js';
import { ROOT } from './processes.js';
import type { Row } from './report.js';
import { evaluate, type TargetResult } from './targets.js';
import { chartSvg, measuredText } from './targets-chart.js';

// What a full `npm run bench` leaves for a newcomer: the table of every target at the top of
// bench/RESULTS.md (between the two markers, the rest of the file untouched) and the chart the
// README shows, bench/targets.png. Both come from the run's own rows, so they never mix runs.

export const RESULTS_MD = join(ROOT, 'bench', 'RESULTS.md');
export const CHART_PNG = join(ROOT, 'bench', 'targets.png');
const BEGIN = '<!-- targets: written by npm run bench, do not edit -->';
const END = '<!-- end of targets -->';
const FONT = '/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf';

export interface RunMeta {
  readonly runId: string;
  readonly date: string;
  /** 1-minute load average at the start and at the end of the run. */
  readonly load: string;
  readonly node: string;
}

const git = (...args: string[]) =>
  execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' }).trim();

/** The commit measured; "+ changes" when the work tree differed from it. */
export function measuredCommit(): string {
  const head = git('rev-parse', '--short', 'HEAD');
  return git('status', '--porcelain', '--untracked-files=no') ? `${head} + changes` : head;
}

const figure = (v: number | undefined) =>
  v === undefined || !Number.isFinite(v)
    ? ''
    : Math.abs(v) >= 100
      ? Math.round(v).toLocaleString('en-US')
      : v.toFixed(2);

export function targetsTable(targets: readonly TargetResult[], meta: RunMeta, commit: string) {
  const lines = [
    `Run ${meta.runId} on Node ${meta.node}: commit ${commit}, ${meta.date}, load average ${meta.load}.`,
    '',
    '| target | goal | measured | baseline | ratio | verdict | commit | date | load |',
    '|---|---|---|---|---|---|---|---|---|',
    ...targets.map(
      (t) =>
        `| ${t.label} | ${t.goal} | ${measuredText(t)} | ${figure(t.baseline)} | ${
          t.ratio === undefined ? '' : `${t.ratio.toFixed(2)}x`
        } | **${t.verdict}** | ${commit} | ${meta.date.slice(0, 10)} | ${meta.load} |`,
    ),
  ];
  return lines.join('\n');
}

/** Replaces the block between the markers (or puts it under the title on the first run). */
export function withTable(markdown: string, table: string): string {
  const block = `${BEGIN}\n${table}\n\n![every target, measured against its goal](targets.png)\n${END}`;
  const begin = markdown.indexOf(BEGIN);
  const end = markdown.indexOf(END);
  if (begin >= 0 && end > begin) {
    return `${markdown.slice(0, begin)}${block}${markdown.slice(end + END.length)}`;
  }
  const firstBreak = markdown.indexOf('\n');
  return `${markdown.slice(0, firstBreak + 1)}\n${block}\n${markdown.slice(firstBreak + 1)}`;
}

export function renderPng(svg: string): Buffer {
  // Text needs a font file; on a machine without one the project installs Debian's.
  execFileSync('bash', [join(ROOT, 'infra/ensure-package.sh'), FONT, 'fonts-dejavu-core'], {
    stdio: 'inherit',
  });
  const png = new Resvg(svg, {
    font: { fontFiles: [FONT], loadSystemFonts: false, defaultFontFamily: 'DejaVu Sans' },
  });
  return png.render().asPng();
}

export function recordTargets(rows: readonly Row[], meta: RunMeta): string {
  const targets = rows.flatMap((r) => evaluate(r) ?? []);
  const commit = measuredCommit();
  const table = targetsTable(targets, meta, commit);
  writeFileSync(RESULTS_MD, withTable(readFileSync(RESULTS_MD, 'utf8'), table));
  const title = `Targets, run ${meta.runId} (commit ${commit}, ${meta.date.slice(0, 10)}, Node ${meta.node})`;
  writeFileSync(CHART_PNG, renderPng(chartSvg(targets, title)));
  return table;
}
