import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The schema registry the registry tests run against: SCHEMA_REGISTRY_URL when set, else the
// project's own Apicurio Registry (infra/stack.sh start registry), started like Kafka and left
// running for reruns. The test that stops and restarts a registry gets one of its own
// (ownRegistry), so no other test file loses its registry meanwhile.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCRIPT = join(ROOT, 'infra/stack.sh');
const STACK_DIR = process.env.STACK_DIR ?? join(ROOT, '.local');

export interface RegistryInstance {
  /** The Confluent-compatible API, e.g. http://127.0.0.1:18081/apis/ccompat/v7 */
  readonly url: string;
  stop(): void;
  start(): void;
}

const HOW_TO_FIX =
  'run `bash infra/stack.sh start registry` to see why (needs Java 17 and Maven; ports REGISTRY_PORT, REGISTRY_MANAGEMENT_PORT), or set SCHEMA_REGISTRY_URL';

function instance(port: number, registryDir: string, managementPort = port + 1): RegistryInstance {
  const env = {
    ...process.env,
    REGISTRY_DIR: registryDir,
    REGISTRY_PORT: String(port),
    REGISTRY_MANAGEMENT_PORT: String(managementPort),
  };
  mkdirSync(registryDir, { recursive: true });
  const run = (command: 'start' | 'stop') => {
    // flock: test files start it at once; the second waits and finds it running. -o: the
    // registry started in the background must not inherit the lock, or it holds it for life.
    const result = spawnSync(
      'flock',
      ['-o', join(registryDir, 'start.lock'), 'bash', SCRIPT, command, 'registry'],
      { env, encoding: 'utf8' },
    );
    if (result.status !== 0) {
      throw new Error(
        `could not ${command} the schema registry on 127.0.0.1:${port}: ${(result.stderr ?? '').slice(-1500)}\n${HOW_TO_FIX}`,
      );
    }
  };
  return {
    url: `http://127.0.0.1:${port}/apis/ccompat/v7`,
    start: () => run('start'),
    stop: () => run('stop'),
  };
}

const basePort = () => Number(process.env.REGISTRY_PORT ?? '18081');

/** The shared registry, started when it is not running. */
export function sharedRegistry(): RegistryInstance {
  const given = process.env.SCHEMA_REGISTRY_URL;
  if (given) return { url: given, start: () => undefined, stop: () => undefined };
  const shared = instance(basePort(), join(STACK_DIR, 'registry'));
  shared.start();
  return shared;
}

/**
 * A registry of the caller's own, to stop and start at will: its own ports (free ones, so CI's
 * lanes running the same file at once never share one) and its own data. `remove` stops it and
 * deletes its data.
 */
export async function ownRegistry(): Promise<RegistryInstance & { remove(): void }> {
  const [http, management] = await Promise.all([freePort(), freePort()]);
  const dir = join(STACK_DIR, `registry-own-${process.pid}-${http}`);
  const own = instance(http, dir, management);
  own.start();
  return {
    ...own,
    remove() {
      own.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
