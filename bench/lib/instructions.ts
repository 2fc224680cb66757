import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

// Instructions a process executes, counted by valgrind's callgrind. CPU time on these machines
// moves ±15 % from one run to the next with the host's load; an instruction count moves by well
// under 1 %, so it can settle ratios finer than that (a 2 % cost, a 1.2x ceiling). It counts work,
// not time: cache misses and waiting are not in it, so it goes beside a timed figure, not
// instead of one. Counted, a process runs about 50x slower: count a few thousand requests, not a
// closed loop. It starts uncounted (start-up and warm-up run some 5-10x slower only) until
// `zeroInstructions` switches counting on.

/** `argv` run under callgrind, counting instructions only, into `outFile` (plus `.N` dumps). */
export function underCallgrind(outFile: string, argv: readonly string[]): string[] {
  return [
    'valgrind',
    '--tool=callgrind',
    `--callgrind-out-file=${outFile}`,
    // Counting starts at zeroInstructions: start-up and warm-up are not measured anyway.
    '--instr-atstart=no',
    // V8's generated code is rewritten in place; valgrind's default (all-non-file) already
    // re-translates code it finds changed in anonymous memory, where V8 puts its code.
    '--dump-line=no',
    ...argv,
  ];
}

/** Switches counting on and sets the counters to zero: the measured span starts. */
export function zeroInstructions(pid: number): void {
  callgrindControl(['-i', 'on', String(pid)]);
  callgrindControl(['-z', String(pid)]);
}

/** What a span counted: every instruction, and those of V8's optimizing compilers. */
export interface Counts {
  readonly total: number;
  /**
   * TurboFan's and Maglev's: code still being optimized (or optimized again after a deopt)
   * while counting. A warmed-up process compiles little; a large share says the count is
   * partly warm-up, not the steady cost.
   */
  readonly compiling: number;
}

/**
 * Instructions the process executed since `zeroInstructions` (or the last read): callgrind
 * dumps its counters to `<outFile>.<n>` and resets them; the dump is read, then removed or,
 * given `keepAs`, moved there (for `callgrind_annotate`: where the instructions went).
 */
export function instructionsSinceZero(pid: number, outFile: string, keepAs?: string): number {
  return countsSinceZero(pid, outFile, keepAs).total;
}

/** `instructionsSinceZero` with the compilers' share. */
export function countsSinceZero(pid: number, outFile: string, keepAs?: string): Counts {
  const dir = dirname(outFile);
  const dumps = () =>
    new Set(readdirSync(dir).filter((f) => f.startsWith(`${basename(outFile)}.`)));
  const before = dumps();
  callgrindControl(['-d', String(pid)]);
  const added = [...dumps()].filter((f) => !before.has(f));
  if (added.length !== 1) throw new Error(`callgrind wrote ${added.length} dumps for ${pid}`);
  const file = join(dir, added[0] as string);
  const text = readFileSync(file, 'utf8');
  if (keepAs === undefined) rmSync(file);
  else renameSync(file, keepAs);
  // `summary:` in the header (older callgrind), `totals:` at the end; Ir is the first event.
  const total = /^(?:summary|totals): (\d+)/m.exec(text);
  if (total === null) throw new Error(`${file}: no summary or totals line`);
  return { total: Number(total[1]), compiling: compilingIn(text) };
}

const COMPILER = /v8::internal::(compiler|maglev|turboshaft)::/i;

/**
 * The self cost of the compilers' functions in a dump: cost lines (`<position> <cost>`) under
 * an `fn=` of a compiler function, but not the line after `calls=` (a callee's inclusive cost).
 * A name is given once, `fn=(id) name` or `cfn=(id) name`, then the id alone.
 */
function compilingIn(text: string): number {
  const names = new Map<string, string>();
  let compiler = false;
  let afterCall = false;
  let sum = 0;
  for (const line of text.split('\n')) {
    // A name may first be given where it is called (`cfn=`).
    const named = /^c?fn=\((\d+)\) (.*)$/.exec(line);
    if (named !== null) names.set(named[1] as string, named[2] as string);
    if (line.startsWith('fn=')) {
      const id = /^fn=\((\d+)\)/.exec(line)?.[1];
      compiler = COMPILER.test(id === undefined ? line : (names.get(id) ?? ''));
    } else if (line.startsWith('calls=')) {
      afterCall = true;
    } else if (/^([+-]?\d+|\*) \d+$/.test(line)) {
      if (compiler && !afterCall) sum += Number(line.slice(line.indexOf(' ') + 1));
      afterCall = false;
    }
  }
  return sum;
}

/**
 * callgrind_control reaches the process through vgdb; it answers once the command ran. It exits
 * 0 even when no callgrind run has that pid (saying so on stdout), so its answer is checked:
 * otherwise a zero aimed at the wrong pid passes unnoticed and the count includes the warm-up.
 */
function callgrindControl(args: readonly string[]): void {
  const said = execFileSync('callgrind_control', args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
    timeout: 120_000,
  });
  if (!/^\s*OK\.$/m.test(said)) {
    throw new Error(`callgrind_control ${args.join(' ')}: ${said.trim()}`);
  }
}
