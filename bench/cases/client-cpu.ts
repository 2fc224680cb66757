import { once } from 'node:events';
import { readdirSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { countsSinceZero, zeroInstructions } from '../lib/instructions.js';
import { numberArg } from '../lib/options.js';
import { freePort, startChild } from '../lib/processes.js';
import { BASE_PATH } from '../lib/stack.js';
import { loadAverage, standalone } from '../lib/standalone.js';
import { spread } from '../lib/stats.js';
import { IDS, KIND_LABELS, KINDS, type Kind } from './client-cpu-calls.js';

// Issue 40: the client's own cost per call against a raw fetch of the same read, as instructions
// (each kind of call made by a child of its own under callgrind, counted after its warm-up) and
// as CPU time (the same children run natively), rounds alternating the order of the sides.
// Instructions settle the ratio; CPU time moves ±15 % between runs here. The API runs natively;
// only the calling side is measured.
//   npx tsx bench/cases/client-cpu.ts [--calls 1000] [--rounds 3] [--warmup 1000]
//     [--cpu-calls 2000] [--cpu-rounds 6] [--port <API port>]

const CALLS = numberArg('calls', 1_000);
const ROUNDS = numberArg('rounds', 3);
const WARMUP = numberArg('warmup', 1_000);
const CPU_CALLS = numberArg('cpu-calls', 2_000);
const CPU_ROUNDS = numberArg('cpu-rounds', 6);
const PORT = numberArg('port', 0); // 0: any free port
const WINDOW_S = 36_000;

const bench = standalone('client-cpu');
const key = newApiKey();

/** Every round runs every kind, in table order on even rounds and reversed on odd ones. */
const inRoundOrder = (round: number): readonly Kind[] =>
  round % 2 === 0 ? KINDS : [...KINDS].reverse();

type PerRound = Record<Kind, number[]>;
const perRound = (): PerRound =>
  Object.fromEntries(KINDS.map((k) => [k, []])) as unknown as PerRound;

/** A child making calls of one kind (client-cpu-child.ts), told what to do over a connection. */
interface Caller {
  readonly pid: number;
  /** Where callgrind writes, when the child runs under it. */
  readonly outFile: string | undefined;
  /** Sends a command and resolves at its answer: the CPU time the child spent on it, µs. */
  send(command: string): Promise<number>;
  stop(): Promise<void>;
}

async function startCaller(baseUrl: string, kind: Kind, callgrind: boolean): Promise<Caller> {
  const outFile = callgrind
    ? join(tmpdir(), `client-cpu-${process.pid}-${kind}.callgrind`)
    : undefined;
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const child = startChild({
    name: `client-cpu-${kind}`,
    script: 'bench/cases/client-cpu-child.ts',
    args: [baseUrl, key, kind, String((server.address() as { port: number }).port)],
    nodeArgs: ['--expose-gc'],
    callgrindOut: outFile,
  });
  const exited = once(child.process, 'exit').then(() => {
    throw new Error(`client-cpu-${kind} exited`);
  });
  const [socket] = (await Promise.race([once(server, 'connection'), exited])) as [Socket];
  const answers = createInterface({ input: socket })[Symbol.asyncIterator]();
  return {
    pid: child.pid,
    outFile,
    async send(command) {
      socket.write(`${command}\n`);
      const answer = await Promise.race([answers.next(), exited]);
      if (answer.done) throw new Error(`client-cpu-${kind} closed the control connection`);
      return Number(answer.value.split(' ')[1]);
    },
    async stop() {
      socket.destroy();
      server.close();
      await child.stop();
      for (const f of readdirSync(tmpdir())) {
        if (outFile && f.startsWith(basename(outFile))) rmSync(join(tmpdir(), f));
      }
    },
  };
}

/** Instructions counted in all spans, and those of V8's optimizing compilers among them. */
const compiling = { counted: 0, byCompilers: 0 };

/** What `n` calls and the collection after them cost a caller: instructions, or CPU µs. */
async function measureRun(caller: Caller, n: number): Promise<number> {
  await caller.send('prepare');
  if (caller.outFile === undefined) return caller.send(`run ${n}`);
  zeroInstructions(caller.pid);
  await caller.send(`run ${n}`);
  const counts = countsSinceZero(caller.pid, caller.outFile);
  compiling.counted += counts.total;
  compiling.byCompilers += counts.compiling;
  return counts.total;
}

/**
 * Instructions (under callgrind) or CPU µs per call of each kind, one figure per round, each
 * kind in a child of its own. A span is n calls and a full collection; what the collection
 * costs without calls is taken off, so a call is charged the collection of its own garbage.
 */
async function perCall(baseUrl: string, callgrind: boolean, rounds: number, n: number) {
  const callers = await Promise.all(KINDS.map((kind) => startCaller(baseUrl, kind, callgrind)));
  try {
    await Promise.all(callers.map((c) => c.send(`run ${WARMUP}`)));
    const figures = perRound();
    for (let round = 0; round < rounds; round++) {
      for (const kind of inRoundOrder(round)) {
        const caller = callers[KINDS.indexOf(kind)] as Caller;
        const collection = await measureRun(caller, 0);
        figures[kind].push(((await measureRun(caller, n)) - collection) / n);
      }
    }
    return figures;
  } finally {
    await Promise.all(callers.map((c) => c.stop()));
  }
}

/** Median and range of `values`, and of their ratios to the same round's `base`. */
function cells(values: number[], base: number[], digits: number): string {
  const v = spread(values);
  const r = spread(values.map((x, i) => x / (base[i] as number)));
  const n = (x: number) => x.toFixed(digits);
  return `${n(v.median)} (${n(v.min)}–${n(v.max)}) | ${r.median.toFixed(2)}x (${r.min.toFixed(2)}–${r.max.toFixed(2)})`;
}

try {
  console.log(
    `client-cpu bench: ${CALLS} calls x ${ROUNDS} rounds under callgrind, ${CPU_CALLS} x ${CPU_ROUNDS} timed; load ${loadAverage()}`,
  );
  for (const id of IDS) {
    await bench.seed.installation(installation(id));
    const record = device('battery', id, id, Date.now(), { soe: 50, powerDc: 0 });
    await bench.seed.devices(id, [{ category: 'battery', record }], Date.now(), WINDOW_S);
  }
  await bench.seed.liveKey(key, { app: 1, installations: IDS.map((id) => installation(id)) });
  const api = await bench.api(PORT || (await freePort()), {
    ONLINE_WINDOW_SECONDS: String(WINDOW_S),
  });
  const baseUrl = `${api.origin}${BASE_PATH}`;

  const instructions = await perCall(baseUrl, true, ROUNDS, CALLS);
  const cpu = await perCall(baseUrl, false, CPU_ROUNDS, CPU_CALLS);
  console.log(
    `\n| per call | instructions, k (median, range of ${ROUNDS}) | vs raw fetch | CPU µs (median, range of ${CPU_ROUNDS}) | vs raw fetch |`,
  );
  console.log('|---|---|---|---|---|');
  for (const kind of KINDS) {
    const k = instructions[kind].map((x) => x / 1000);
    const rawK = instructions.raw.map((x) => x / 1000);
    console.log(
      `| ${KIND_LABELS[kind]} | ${cells(k, rawK, 1)} | ${cells(cpu[kind], cpu.raw, 0)} |`,
    );
  }
  const share = ((100 * compiling.byCompilers) / compiling.counted).toFixed(1);
  console.log(
    `\nRatios are per round (each side against raw fetch in the same round); ${share} % of the counted instructions were V8 optimizing code (warm-up left over). Load ${loadAverage()}.`,
  );
  console.log('(target: client <= 1.2x raw fetch)');
} finally {
  await bench.close();
}
