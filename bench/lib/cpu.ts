import { readFileSync } from 'node:fs';

// CPU time of processes: /proc/<pid>/stat for children and servers, process.cpuUsage for this one.

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** utime + stime of a process, in seconds; NaN when the process is gone. */
export function cpuSecondsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Field 2 (comm) may contain spaces: count from the closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

export function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

export type Pids = Readonly<Record<string, number | 'self'>>;

/** Starts a measurement; the returned function gives the CPU seconds each process used since. */
export function cpuMeter(pids: Pids): () => Record<string, number> {
  const read = () =>
    Object.fromEntries(
      Object.entries(pids).map(([name, pid]) => [
        name,
        pid === 'self' ? selfCpuSeconds() : cpuSecondsOf(pid),
      ]),
    );
  const start = read();
  return () => {
    const end = read();
    return Object.fromEntries(
      Object.keys(pids).map((name) => [name, (end[name] as number) - (start[name] as number)]),
    );
  };
}
