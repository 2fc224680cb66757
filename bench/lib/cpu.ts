import { readFileSync } from 'node:fs';

// CPU time of processes: /proc/<pid>/stat for children and servers, process.cpuUsage for this one.

const TICKS_PER_SECOND = 100; // USER_HZ on Linux

/**
 * utime + stime of a process, in seconds; NaN when the process is gone. `mainThread`: its main
 * thread's alone (a Node process also runs GC helpers, libuv's pool and the JIT beside it).
 */
export function cpuSecondsOf(pid: number, mainThread = false): number {
  try {
    const stat = readFileSync(
      mainThread ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`,
      'utf8',
    );
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

/** A process by pid, its main thread alone (`main:<pid>`), or this process. */
export type Pids = Readonly<Record<string, number | `main:${number}` | 'self'>>;

const secondsOf = (pid: Pids[string]): number =>
  pid === 'self'
    ? selfCpuSeconds()
    : typeof pid === 'number'
      ? cpuSecondsOf(pid)
      : cpuSecondsOf(Number(pid.slice(5)), true);

/** Starts a measurement; the returned function gives the CPU seconds each process used since. */
export function cpuMeter(pids: Pids): () => Record<string, number> {
  const read = () =>
    Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, secondsOf(pid)]));
  const start = read();
  return () => {
    const end = read();
    return Object.fromEntries(
      Object.keys(pids).map((name) => [name, (end[name] as number) - (start[name] as number)]),
    );
  };
}
