import type { Row } from './report.js';
import type { Spread } from './stats.js';

// A bench row's target, read from its text (">= 0.7x", "<= 10 ms", ">= 40000 events/s, >= 0.2x"):
// each clause compares the row's ratio (a goal in x) or its measured median (any other unit).
// The score puts every target on one axis for the chart: measured against goal, oriented so
// that 1 is the goal and above 1 is met.

export type Verdict = 'met' | 'missed' | 'reported';

export interface TargetResult {
  readonly label: string;
  readonly goal: string;
  readonly measured: number;
  readonly unit: string;
  readonly baseline?: number;
  readonly ratio?: number;
  readonly verdict: Verdict;
  /** min over the clauses of measured/goal (>=) or goal/measured (<=); undefined: no clause. */
  readonly score?: number;
}

const CLAUSE = /^(>=|<=)\s*([\d,]*\.?\d+)\s*(.*)$/;

const median = (v: Spread | number | undefined): number | undefined =>
  v === undefined ? undefined : typeof v === 'number' ? v : v.median;

function clauseScore(clause: string, measured: number, ratio?: number): number | undefined {
  const m = CLAUSE.exec(clause.trim());
  if (!m) return undefined;
  const goal = Number((m[2] as string).replaceAll(',', ''));
  const value = m[3]?.trim() === 'x' ? ratio : measured;
  if (value === undefined || !Number.isFinite(value) || goal <= 0) return undefined;
  return m[1] === '>=' ? value / goal : value > 0 ? goal / value : Number.POSITIVE_INFINITY;
}

export function evaluate(row: Row): TargetResult | undefined {
  if (!row.target) return undefined;
  const measured = median(row.candidate) ?? Number.NaN;
  // Clauses are split where a comparison starts: "1,536 bytes" keeps its thousands comma.
  const known = row.target
    .split(/,\s*(?=>=|<=)/)
    .map((c) => clauseScore(c, measured, row.ratio))
    .filter((s): s is number => s !== undefined);
  const score = known.length > 0 ? Math.min(...known) : undefined;
  return {
    label: `${row.section}: ${row.name}`,
    goal: row.target,
    measured,
    unit: row.unit,
    baseline: median(row.baseline),
    ratio: row.ratio,
    verdict: score === undefined ? 'reported' : score >= 1 ? 'met' : 'missed',
    score,
  };
}
