import { connect } from 'node:net';
import { createInterface } from 'node:readline';
import { calls, type Kind, runCalls } from './client-cpu-calls.js';

// The calling side of client-cpu.ts, run under callgrind with --expose-gc: one kind of call per
// process (as an application makes them; calls of other kinds would make the shared fetch code
// polymorphic). It makes the calls it is told to over a control connection and answers when
// they are done, so the bench zeroes and reads the counts around them while this process waits.
// Every command ends with a full collection: the garbage of a span's calls is collected inside
// the span, whenever V8 would have got to it. Started without callgrind, it times the same.
//   node --expose-gc --import tsx bench/cases/client-cpu-child.ts <baseUrl> <apiKey> <kind> <port>
// Lines in, answers out:
//   prepare   a few calls outside any span (the keep-alive connection may have closed while
//             other children ran), then `ready <cpu µs>`
//   run <n>   n calls, then `done <cpu µs>` (n = 0: what the collection alone costs)

const PREPARE_CALLS = 20;

const [baseUrl, apiKey, kind, port] = process.argv.slice(2) as [string, string, Kind, string];
const call = calls(baseUrl, apiKey)[kind];
if (call === undefined) throw new Error(`unknown kind: ${kind}`);
const collect = globalThis.gc;
if (collect === undefined) throw new Error('run with --expose-gc');
const control = connect(Number(port), '127.0.0.1');

for await (const line of createInterface({ input: control })) {
  const [command, n] = line.split(' ');
  const before = process.cpuUsage();
  if (command === 'prepare') await runCalls(call, PREPARE_CALLS);
  else if (command === 'run') await runCalls(call, Number(n));
  else throw new Error(`unknown command: ${line}`);
  collect();
  const cpu = process.cpuUsage(before);
  control.write(`${command === 'prepare' ? 'ready' : 'done'} ${cpu.user + cpu.system}\n`);
}
