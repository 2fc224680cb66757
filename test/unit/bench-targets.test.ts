import { describe, expect, it } from 'vitest';
import type { Row } from '../../bench/lib/report.js';
import { evaluate } from '../../bench/lib/targets.js';
import { chartSvg } from '../../bench/lib/targets-chart.js';
import { withTable } from '../../bench/lib/targets-record.js';

// The verdicts at the top of bench/RESULTS.md and on the README's chart are read from each bench
// row's target text: a wrong reading would show a missed target as met.

const row = (over: Partial<Row>): Row => ({
  section: 's',
  name: 'n',
  unit: 'req/s',
  candidate: { median: 100, min: 90, max: 110, runs: 3 },
  ...over,
});

describe('bench targets', () => {
  it('compares a goal in x with the ratio, any other goal with the measured median', () => {
    expect(evaluate(row({ ratio: 0.6, target: '>= 0.7x' }))?.verdict).toBe('missed');
    expect(evaluate(row({ ratio: 0.71, target: '>= 0.7x' }))?.verdict).toBe('met');
    expect(evaluate(row({ unit: 'ms', candidate: 6.6, target: '<= 10 ms' }))).toMatchObject({
      verdict: 'met',
      score: 10 / 6.6,
    });
    expect(
      evaluate(row({ unit: 'bytes', candidate: 1600, target: '<= 1,536 bytes' }))?.verdict,
    ).toBe('missed');
  });

  it('needs every clause of a compound goal, and scores by the one that binds', () => {
    const both = row({ candidate: 50_000, ratio: 0.1, target: '>= 40000 events/s, >= 0.2x' });
    expect(evaluate(both)).toMatchObject({ verdict: 'missed', score: 0.5 });
  });

  it('reports without a verdict a target that states no comparison, and skips rows without one', () => {
    expect(evaluate(row({ target: 'report what 2 cores allow' }))?.verdict).toBe('reported');
    expect(evaluate(row({}))).toBeUndefined();
  });

  it('replaces only the generated block of RESULTS.md, and adds it under the title once', () => {
    const first = withTable('# Benchmark results\n\nhand-written\n', 'T1');
    expect(first).toMatch(/^# Benchmark results\n\n<!-- targets:[^\n]*\nT1\n/);
    const second = withTable(first, 'T2');
    expect(second).toContain('T2');
    expect(second).not.toContain('T1');
    expect(second.endsWith('hand-written\n')).toBe(true);
  });

  it('draws one bar per target and escapes the labels', () => {
    const svg = chartSvg(
      [evaluate(row({ name: 'a < b', ratio: 0.5, target: '>= 0.7x' })) ?? expect.fail()],
      'title',
    );
    expect(svg.match(/<rect /g)).toHaveLength(2); // the background and the one bar
    expect(svg).toContain('a &lt; b');
  });
});
