import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/free-port.js';

// `infra/demo.sh status` and `stop` in a checkout of their own (a temporary copy of the script,
// the stack and Prometheus scripts replaced by stubs that print what they were given), with the
// demo's processes stood in for by small servers on the ports recorded at start. Another demo
// answers on the ports of the shell's environment: status must neither probe nor report it, and
// exits non-zero when one of this demo's processes is down or not ready.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'demo-status-'));
const demoDir = join(dir, '.local', 'demo');
const children: ChildProcess[] = [];
let other: Server;
let otherHits = 0;
const ports: Record<string, number> = {};

/** A process answering /readyz with `status` on `port`, its pid in the demo's pid file. */
async function fakeProcess(name: string, port: number | null, status = 200): Promise<ChildProcess> {
  const script =
    port === null
      ? 'setInterval(() => {}, 1000)'
      : `require('node:http').createServer((q, s) => { s.statusCode = ${status}; s.end(); }).listen(${port}, '127.0.0.1', () => console.log('up'))`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(child);
  if (port !== null) await new Promise((resolve) => child.stdout?.once('data', resolve));
  writeFileSync(join(demoDir, `${name}.pid`), `${child.pid}\n`);
  return child;
}

function demo(command: string, env: Record<string, string>) {
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      'bash',
      [join(dir, 'infra', 'demo.sh'), command],
      { env: { PATH: process.env.PATH ?? '', HOME: dir, ...env }, timeout: 30_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

// The shell of someone who also runs another demo: its ports, where that demo answers.
const shellEnv = () => ({
  API_PORT: String(ports.other),
  CONSUMER_HEALTH_PORT: String(ports.other),
  REDIS_PORT: '1',
});

beforeAll(async () => {
  mkdirSync(join(dir, 'infra'), { recursive: true });
  mkdirSync(demoDir, { recursive: true });
  copyFileSync(join(ROOT, 'infra', 'demo.sh'), join(dir, 'infra', 'demo.sh'));
  for (const stub of ['stack', 'prometheus'])
    writeFileSync(
      join(dir, 'infra', `${stub}.sh`),
      `echo "${stub} $1 api=$API_PORT kafka=$KAFKA_PORT redis=$REDIS_PORT prometheus=$PROMETHEUS_PORT"\n`,
    );
  for (const name of ['api', 'consumers', 'other', 'prometheus', 'kafka', 'controller', 'redis'])
    ports[name] = await freePort();
  other = createServer((_, res) => {
    otherHits += 1;
    res.end();
  });
  await new Promise<void>((resolve) => other.listen(ports.other, '127.0.0.1', resolve));
  writeFileSync(
    join(demoDir, 'ports'),
    [
      `API_PORT=${ports.api}`,
      `CONSUMER_HEALTH_PORT=${ports.consumers}`,
      `PROMETHEUS_PORT=${ports.prometheus}`,
      `KAFKA_PORT=${ports.kafka}`,
      `KAFKA_CONTROLLER_PORT=${ports.controller}`,
      `REDIS_PORT=${ports.redis}`,
      '',
    ].join('\n'),
  );
  await fakeProcess('consumers', ports.consumers ?? 0);
  await fakeProcess('simulator', null);
});
afterAll(async () => {
  for (const child of children) child.kill('SIGKILL');
  await new Promise((resolve) => other.close(resolve));
  rmSync(dir, { recursive: true, force: true });
});

describe('demo.sh status', () => {
  it("reports this checkout's processes on the recorded ports, never the environment's", async () => {
    const api = await fakeProcess('api', ports.api ?? 0);
    const run = await demo('status', shellEnv());
    expect(run, run.stderr).toMatchObject({ code: 0 });
    expect(run.stdout).toContain(
      `api: running (pid ${api.pid}), ready at http://127.0.0.1:${ports.api}/readyz`,
    );
    expect(run.stdout).toContain(`ready at http://127.0.0.1:${ports.consumers}/readyz`);
    expect(run.stdout).toContain(
      `stack status api=${ports.api} kafka=${ports.kafka} redis=${ports.redis}`,
    );
    expect(run.stdout).toContain(`prometheus status api=${ports.api}`);
    expect(run.stderr).toContain(
      `API_PORT=${ports.other} ignored: this checkout's demo runs on ${ports.api}`,
    );
    expect(otherHits).toBe(0);
    api.kill('SIGKILL');
    await new Promise((resolve) => api.once('exit', resolve));
  });

  it('exits non-zero when a process is down, without probing its port', async () => {
    const run = await demo('status', shellEnv());
    expect(run.code).toBe(1);
    expect(run.stdout).toMatch(/^api: stopped$/m);
    expect(otherHits).toBe(0);
  });

  it('exits non-zero when a process runs but is not ready', async () => {
    const api = await fakeProcess('api', ports.api ?? 0, 503);
    const run = await demo('status', shellEnv());
    expect(run.code).toBe(1);
    expect(run.stdout).toContain(
      `api: running (pid ${api.pid}), not ready at http://127.0.0.1:${ports.api}/readyz`,
    );
  });

  it('stop stops the processes and the stack on the recorded ports, then forgets them', async () => {
    const run = await demo('stop', shellEnv());
    expect(run, run.stderr).toMatchObject({ code: 0 });
    expect(run.stdout).toContain('simulator stopped');
    expect(run.stdout).toContain('api stopped');
    expect(run.stdout).toContain(
      `stack stop api=${ports.api} kafka=${ports.kafka} redis=${ports.redis}`,
    );
    expect(existsSync(join(demoDir, 'ports'))).toBe(false);
    const after = await demo('status', shellEnv());
    expect(after.code).toBe(1);
    expect(after.stdout).toContain('no demo started in this checkout');
  });
});
