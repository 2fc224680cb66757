import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// The schema registry the registry tests run against: SCHEMA_REGISTRY_URL when set, else the
// project's own Apicurio Registry (infra/stack.sh start registry), started like Kafka and left
// running for reruns. A second instance of its own (own port and directory) serves the test
// that stops and restarts a registry, so no other test file loses its registry meanwhile.

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

function instance(port: number, registryDir: string): RegistryInstance {
  const env = {
    ...process.env,
    REGISTRY_DIR: registryDir,
    REGISTRY_PORT: String(port),
    REGISTRY_MANAGEMENT_PORT: String(port + 1),
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

/** A registry of the caller's own (REGISTRY_PORT + 2 and + 3), to stop and start at will. */
export function ownRegistry(): RegistryInstance {
  const own = instance(basePort() + 2, join(STACK_DIR, 'registry-restart'));
  own.start();
  return own;
}
