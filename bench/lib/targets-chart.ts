import type { TargetResult } from './targets.js';

// One chart of every target: a bar per target, its length the score (measured against goal,
// 1 = the goal, longer is better), a line at the goal. Built as SVG text here; targets-record.ts
// renders it to PNG. Bars past 2x the goal are drawn at 2x (the label gives the figure).

const WIDTH = 1000;
const LABEL_W = 560;
const BAR_W = 300;
const ROW_H = 24;
const TOP = 46;
const MAX_SCORE = 2;
const COLOURS = { met: '#2e7d32', missed: '#c62828', reported: '#757575' } as const;

const xmlText = (s: string) =>
  s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');

const figure = (v: number) =>
  !Number.isFinite(v)
    ? '-'
    : Math.abs(v) >= 100
      ? Math.round(v).toLocaleString('en-US')
      : v.toFixed(2);

export function measuredText(t: TargetResult): string {
  const value = t.goal.includes('x') && t.ratio !== undefined ? `${t.ratio.toFixed(2)}x` : '';
  const abs = `${figure(t.measured)} ${t.unit}`;
  return value ? `${value} (${abs})` : abs;
}

export function chartSvg(targets: readonly TargetResult[], title: string): string {
  const height = TOP + targets.length * ROW_H + 30;
  const x = (score: number) => LABEL_W + (Math.min(score, MAX_SCORE) / MAX_SCORE) * BAR_W;
  const goalX = x(1);
  const rows = targets.map((t, i) => {
    const y = TOP + i * ROW_H;
    const label = t.label.length > 78 ? `${t.label.slice(0, 77)}…` : t.label;
    const bar =
      t.score === undefined
        ? ''
        : `<rect x="${LABEL_W}" y="${y + 5}" width="${(x(t.score) - LABEL_W).toFixed(1)}" height="${ROW_H - 10}" fill="${COLOURS[t.verdict]}"/>`;
    return [
      `<text x="${LABEL_W - 8}" y="${y + 16}" text-anchor="end">${xmlText(label)}</text>`,
      bar,
      `<text x="${LABEL_W + BAR_W + 8}" y="${y + 16}">${xmlText(`${measuredText(t)}, goal ${t.goal}`)}</text>`,
    ].join('');
  });
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH + 200}" height="${height}" font-family="DejaVu Sans, sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#ffffff"/>`,
    `<text x="12" y="22" font-size="15" font-weight="bold">${xmlText(title)}</text>`,
    `<text x="${goalX}" y="${TOP - 6}" text-anchor="middle" fill="#000">goal</text>`,
    ...rows,
    `<line x1="${goalX}" y1="${TOP - 2}" x2="${goalX}" y2="${height - 26}" stroke="#000" stroke-dasharray="4 3"/>`,
    `<text x="12" y="${height - 8}" fill="#555">bar: measured against goal (goal = the dashed line, longer is better, drawn up to 2x); green met, red missed, grey reported only</text>`,
    '</svg>',
  ].join('\n');
}
