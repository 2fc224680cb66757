import { describe, expect, it } from 'vitest';
import { createProgressReporter, formatElapsed, formatProgress } from '../../tools/progress.js';

const sample = (events: number, elapsedMs: number) => ({
  events,
  elapsedMs,
  installations: 50,
  devices: 230,
  silentDevices: 3,
});

describe('simulator progress', () => {
  it('formats counts, rate and elapsed time', () => {
    expect(formatElapsed(3_723_000)).toBe('01:02:03');
    expect(formatProgress(sample(1200, 6_000), 200)).toBe(
      'sent 1200 events | 200.0 events/s | elapsed 00:00:06 | 50 installations, 230 devices (3 silent)',
    );
  });

  it('rewrites one line on a terminal', () => {
    const out: string[] = [];
    const reporter = createProgressReporter({ isTTY: true, write: (t: string) => out.push(t) });
    reporter.update(sample(10, 100));
    reporter.update(sample(60, 300));
    reporter.update(sample(110, 600));
    reporter.done(sample(200, 1000));
    expect(out).toHaveLength(3);
    expect(out.every((t) => t.startsWith('\r\u001b[2K'))).toBe(true);
    expect(out.slice(0, -1).every((t) => !t.endsWith('\n'))).toBe(true);
    expect(out[0]).toContain('200.0 events/s');
    expect(out[1]).toContain('166.7 events/s');
    expect(out.at(-1)).toMatch(/200\.0 events\/s.*\n$/);
  });

  it('prints a line every few seconds otherwise', () => {
    const out: string[] = [];
    const reporter = createProgressReporter({ write: (t: string) => out.push(t) }, 5_000);
    for (let ms = 100; ms <= 12_000; ms += 100) reporter.update(sample(ms / 5, ms));
    expect(out).toHaveLength(2);
    expect(out.every((t) => t.endsWith('\n') && !t.includes('\r'))).toBe(true);
  });
});
