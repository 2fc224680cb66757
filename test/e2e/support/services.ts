import { type ServiceProcess, startService } from '../../faults/processes.js';
import { waitFor } from '../../support/stack.js';

// Consumer and API processes as production runs them (test/faults/processes.ts), with what an
// e2e test waits for: a consumer's readiness on the health port it logged, an API's readiness on
// its own port.

const answers = async (url: string): Promise<true | undefined> => {
  const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
  await res.arrayBuffer();
  return res.status === 200 ? true : undefined;
};

/** Starts consumers/main.ts and resolves once its /readyz answers 200. */
export async function startConsumerService(
  name: string,
  env: Record<string, string>,
  timeoutMs = 45_000,
): Promise<ServiceProcess> {
  const proc = startService(name, 'consumers/main.ts', { ...env, CONSUMER_HEALTH_PORT: '0' });
  const port = await waitFor(
    `${name} logs its health port`,
    async () => {
      if (!proc.alive()) throw new Error(`${name} exited: ${tail(proc)}`);
      const line = proc.logs.find((l) => typeof l.healthPort === 'number');
      return line ? Number(line.healthPort) : undefined;
    },
    timeoutMs,
  );
  await waitFor(`${name} ready`, () => answers(`http://127.0.0.1:${port}/readyz`), timeoutMs);
  return proc;
}

/** Starts api/main.ts on the port and resolves once its /readyz answers 200 there. */
export async function startApiService(
  name: string,
  port: number,
  env: Record<string, string>,
  timeoutMs = 45_000,
): Promise<ServiceProcess> {
  // Warnings only: a line per request would drown what a failure message needs.
  const proc = startService(name, 'api/main.ts', {
    ...env,
    API_PORT: String(port),
    LOG_LEVEL: 'warn',
  });
  await waitFor(
    `${name} ready on ${port}`,
    async () => {
      if (!proc.alive()) throw new Error(`${name} exited: ${tail(proc)}`);
      return answers(`http://127.0.0.1:${port}/readyz`).catch(() => undefined);
    },
    timeoutMs,
  );
  return proc;
}

/** SIGTERM, then SIGKILL for whatever has not exited after `graceMs`. */
export async function stopServices(procs: readonly ServiceProcess[], graceMs = 15_000) {
  const running = procs.filter((p) => p.alive());
  for (const p of running) p.signal('SIGTERM');
  const timer = setTimeout(() => {
    for (const p of running) p.signal('SIGKILL');
  }, graceMs);
  await Promise.all(running.map((p) => p.exited));
  clearTimeout(timer);
}

/** The process's last log lines, shortened, for a failure message. */
export const tail = (proc: ServiceProcess, lines = 15): string =>
  proc.logs
    .slice(-lines)
    .map((l) => JSON.stringify(l).slice(0, 300))
    .join('\n');
