import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './free-port.js';
import { waitFor } from './stack.js';

// A redis-server of one test file's own, for faults that would reach every other test on the
// shared one (stopping it, pausing its writes). Nothing is kept on disk.

export interface ThrowawayRedis {
  readonly port: number;
  readonly url: string;
  /** Starts (or starts again, on the same port) and resolves once it answers PING. */
  start(): Promise<void>;
  /** SIGKILL: what a crash does. */
  stop(): Promise<void>;
}

export async function throwawayRedis(): Promise<ThrowawayRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'throwaway-redis-'));
  let server: ChildProcess | null = null;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async start() {
      server = spawn(
        'redis-server',
        [
          ...['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
          // A replica's full sync writes an RDB file: in a folder of its own, not the checkout.
          ...['--dir', dir],
        ],
        { stdio: 'ignore' },
      );
      const probe = new Redis({
        port,
        host: '127.0.0.1',
        lazyConnect: true,
        retryStrategy: () => null,
        maxRetriesPerRequest: 0,
      });
      probe.on('error', () => undefined);
      await waitFor('redis-server up', async () => {
        try {
          await probe.connect();
          return (await probe.ping()) === 'PONG' ? true : undefined;
        } catch {
          probe.disconnect();
          return undefined;
        }
      });
      probe.disconnect();
    },
    async stop() {
      const child = server;
      server = null;
      if (!child || child.exitCode !== null) return;
      await new Promise<void>((resolve) => {
        child.once('exit', () => resolve());
        child.kill('SIGKILL');
      });
    },
  };
}
