import type { Spread } from './stats.js';

// The table the bench prints and records: one row per named case, the candidate's figure, the
// baseline's figure from the same run, their ratio, and the target.

export interface Row {
  readonly section: string;
  readonly name: string;
  readonly unit: string;
  readonly candidate: Spread | number;
  readonly baseline?: Spread | number;
  /** Ratio candidate/baseline (or the figure against its target). */
  readonly ratio?: number;
  readonly target?: string;
  readonly note?: string;
}

const fmt = (v: number) =>
  !Number.isFinite(v)
    ? '-'
    : Math.abs(v) >= 100
      ? Math.round(v).toLocaleString('en-US')
      : Math.abs(v) >= 10
        ? v.toFixed(1)
        : v.toFixed(2);

export function cell(v: Spread | number | undefined): string {
  if (v === undefined) return '';
  if (typeof v === 'number') return fmt(v);
  return v.runs > 1 ? `${fmt(v.median)} (${fmt(v.min)}–${fmt(v.max)})` : fmt(v.median);
}

export function markdownTable(rows: readonly Row[]): string {
  const lines = [
    '| case | unit | candidate median (min–max) | baseline median (min–max) | ratio | target | note |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.section}: ${r.name} | ${r.unit} | ${cell(r.candidate)} | ${cell(r.baseline)} | ${
        r.ratio === undefined ? '' : `${r.ratio.toFixed(2)}x`
      } | ${r.target ?? ''} | ${r.note ?? ''} |`,
    );
  }
  return lines.join('\n');
}

export function printRow(r: Row): void {
  const ratio = r.ratio === undefined ? '' : `  ratio ${r.ratio.toFixed(2)}x`;
  const base = r.baseline === undefined ? '' : `  baseline ${cell(r.baseline)}`;
  const target = r.target ? `  [target ${r.target}]` : '';
  console.log(`  ${r.section}: ${r.name}: ${cell(r.candidate)} ${r.unit}${base}${ratio}${target}`);
}
