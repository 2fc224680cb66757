import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

// Instructions a process executes, counted by valgrind's callgrind. CPU time on these machines
// moves ±15 % from one run to the next with the host's load; an instruction count moves by well
// under 1 %, so it can settle ratios finer than that (a 2 % cost, a 1.2x ceiling). It counts work,
// not time: cache misses and waiting are not in it, so it goes beside a timed figure, not
// instead of one. Under callgrind a process runs about 50x slower: count a few thousand requests,
// not a closed loop.

/** `argv` run under callgrind, counting instructions only, into `outFile` (plus `.N` dumps). */
export function underCallgrind(outFile: string, argv: readonly string[]): string[] {
  return [
    'valgrind',
    '--tool=callgrind',
    `--callgrind-out-file=${outFile}`,
    // V8 rewrites its generated code in place: without this, callgrind may run stale copies.
    '--smc-check=all',
    '--dump-line=no',
    ...argv,
  ];
}

/** Sets the counters of a process started under callgrind to zero: the measured span starts. */
export function zeroInstructions(pid: number): void {
  execFileSync('callgrind_control', ['-z', String(pid)], { stdio: 'ignore' });
}

/**
 * Instructions the process executed since it started or since `zeroInstructions`: callgrind
 * dumps its counters to `<outFile>.<n>`, read and removed here.
 */
export function instructionsSinceZero(pid: number, outFile: string): number {
  const dir = dirname(outFile);
  const dumps = () =>
    new Set(readdirSync(dir).filter((f) => f.startsWith(`${basename(outFile)}.`)));
  const before = dumps();
  execFileSync('callgrind_control', ['-d', String(pid)], { stdio: 'ignore' });
  const added = [...dumps()].filter((f) => !before.has(f));
  if (added.length !== 1) throw new Error(`callgrind wrote ${added.length} dumps for ${pid}`);
  const file = join(dir, added[0] as string);
  const summary = /^summary: (\d+)$/m.exec(readFileSync(file, 'utf8'));
  rmSync(file);
  if (summary === null) throw new Error(`${file}: no summary line`);
  return Number(summary[1]);
}
