import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cpuSecondsOf } from './cpu.js';
import { ROOT } from './processes.js';
import type { Request, Run } from './side-by-side.js';
import type { Target } from './standalone.js';

// wrk (C; Debian package `wrk`) as the load generator where two sides answer different
// headers. autocannon parses every response in JavaScript (http-parser-js) on the same two
// cores as the server, so its own cost grows with each header a side adds, and a ratio of
// req/s then charges the client's parsing to the server. Here the target runs on CPU 1 and wrk
// on CPU 0, so the target's own core bounds its req/s.

const GENERATOR_CPU = '0';
const TARGET_CPU = '1';

/** Installs wrk from Debian's packages when missing (infra/ensure-package.sh). */
export function ensureWrk(): void {
  execFileSync('bash', [join(ROOT, 'infra/ensure-package.sh'), 'wrk', 'wrk'], {
    stdio: 'inherit',
  });
}

/** Keeps every thread of `pid` on the target's CPU from now on. */
export function pinTarget(pid: number): void {
  execFileSync('taskset', ['-a', '-cp', TARGET_CPU, String(pid)], { stdio: 'ignore' });
}

/** Keeps every thread of `pid` (a load generator of our own) on the generator's CPU. */
export function pinGenerator(pid: number): void {
  execFileSync('taskset', ['-a', '-cp', GENERATOR_CPU, String(pid)], { stdio: 'ignore' });
}

const luaString = (s: string) => JSON.stringify(s); // a JSON string is a valid Lua string here

/**
 * A wrk script sending requests drawn from `samples` calls of `request()`, formatted once at
 * start so each request costs wrk a table lookup.
 */
function script(request: Request, samples: number): string {
  const rows = Array.from({ length: samples }, () => {
    const { path, headers } = request();
    const h = Object.entries(headers)
      .map(([k, v]) => `[${luaString(k)}] = ${luaString(v)}`)
      .join(', ');
    return `  wrk.format("GET", ${luaString(path)}, { ${h} }),`;
  });
  return [
    'local reqs',
    'init = function(args)',
    '  reqs = {',
    ...rows,
    '  }',
    'end',
    'request = function() return reqs[math.random(#reqs)] end',
    '',
  ].join('\n');
}

/** One measured run of wrk against `target` (pinned with pinTarget first). */
export function wrkRun(
  target: Target,
  request: Request,
  opts: { seconds: number; connections: number },
): Run & { readonly total: number; readonly failed: number } {
  const file = join(tmpdir(), `bench-wrk-${process.pid}.lua`);
  writeFileSync(file, script(request, 1_000));
  const before = cpuSecondsOf(target.pid);
  let out: string;
  try {
    out = execFileSync(
      'taskset',
      [
        '-c',
        GENERATOR_CPU,
        'wrk',
        '-t1',
        `-c${opts.connections}`,
        `-d${opts.seconds}s`,
        '--latency',
        '-s',
        file,
        target.origin,
      ],
      { encoding: 'utf8' },
    );
  } finally {
    rmSync(file, { force: true });
  }
  const cpu = cpuSecondsOf(target.pid) - before;
  const done = /(\d+) requests in ([\d.]+)(ms|s|m)\b/.exec(out);
  if (done === null) throw new Error(`wrk gave no figures:\n${out}`);
  const total = Number(done[1]);
  const seconds = Number(done[2]) * { ms: 0.001, s: 1, m: 60 }[done[3] as 'ms' | 's' | 'm'];
  const errors = /Socket errors: (.*)/.exec(out)?.[1];
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1];
  if (errors !== undefined || non2xx !== undefined)
    console.warn(`  wrk: socket errors ${errors ?? 'none'}, non-2xx ${non2xx ?? 0}`);
  const socketErrors = [...(errors ?? '').matchAll(/\d+/g)].reduce((n, m) => n + Number(m[0]), 0);
  const p99 = /\s99%\s+([\d.]+)(us|ms|s)/.exec(out);
  const unit = { us: 0.001, ms: 1, s: 1000 } as const;
  return {
    rps: total / seconds,
    cpuUs: (cpu / total) * 1e6,
    p99: p99 === null ? Number.NaN : Number(p99[1]) * unit[p99[2] as keyof typeof unit],
    total,
    failed: socketErrors + Number(non2xx ?? 0),
  };
}
