// The simulator's progress line on stderr: one line rewritten in place on a terminal, a line
// every few seconds when stderr is a file or pipe (logs stay readable).

export interface ProgressSample {
  readonly events: number;
  readonly elapsedMs: number;
  readonly installations: number;
  readonly devices: number;
  readonly silentDevices: number;
}

export function formatProgress(sample: ProgressSample, eventsPerSecond: number): string {
  return (
    `sent ${sample.events} events | ${eventsPerSecond.toFixed(1)} events/s | ` +
    `elapsed ${formatElapsed(sample.elapsedMs)} | ${sample.installations} installations, ` +
    `${sample.devices} devices (${sample.silentDevices} silent)`
  );
}

export function formatElapsed(ms: number): string {
  const total = Math.floor(ms / 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(Math.floor(total / 3600))}:${pad(Math.floor(total / 60) % 60)}:${pad(total % 60)}`;
}

export interface ProgressReporter {
  update(sample: ProgressSample): void;
  done(sample: ProgressSample): void;
}

interface Output {
  write(text: string): unknown;
  readonly isTTY?: boolean;
}

export function createProgressReporter(out: Output, lineIntervalMs = 5_000): ProgressReporter {
  const tty = out.isTTY === true;
  const intervalMs = tty ? 250 : lineIntervalMs;
  let last: { events: number; elapsedMs: number } = { events: 0, elapsedMs: 0 };
  const rate = (s: ProgressSample) => {
    const dt = s.elapsedMs - last.elapsedMs;
    return dt > 0 ? ((s.events - last.events) * 1000) / dt : 0;
  };
  const print = (s: ProgressSample, final: boolean) => {
    const eventsPerSecond = final
      ? s.elapsedMs > 0
        ? (s.events * 1000) / s.elapsedMs
        : 0
      : rate(s);
    const line = formatProgress(s, eventsPerSecond);
    out.write(tty ? `\r\u001b[2K${line}${final ? '\n' : ''}` : `${line}\n`);
    last = { events: s.events, elapsedMs: s.elapsedMs };
  };
  return {
    update(s) {
      if (s.elapsedMs - last.elapsedMs >= intervalMs) print(s, false);
    },
    done: (s) => print(s, true),
  };
}
