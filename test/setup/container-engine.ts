import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Which container engine testcontainers talks to, and the settings it needs (TEST_STACK=containers).
// A Docker host (DOCKER_HOST, or /var/run/docker.sock) is used as it is, with the official images.
// Otherwise, as on this project's machines, infra/containers/podman.sh installs podman (as root),
// builds local Kafka and Redis images without a registry and serves the Docker API.
// Host networking and loopback only, always: no bridge network, no private-range address.

export interface ContainerEngine {
  /** Environment testcontainers reads; set before it is imported. */
  readonly env: Record<string, string>;
  readonly podman: boolean;
  readonly kafkaImage: string;
  readonly redisImage: string;
}

const PODMAN_SOCKET = 'unix:///run/podman/podman.sock';
const script = (path: string) => fileURLToPath(new URL(`../../${path}`, import.meta.url));

export function prepareContainerEngine(): ContainerEngine {
  const dockerHost =
    process.env.DOCKER_HOST ??
    (existsSync('/var/run/docker.sock') ? 'unix:///var/run/docker.sock' : PODMAN_SOCKET);
  const podman = dockerHost === PODMAN_SOCKET;
  if (podman) {
    const up = spawnSync('bash', [script('infra/containers/podman.sh'), 'up'], {
      stdio: 'inherit',
    });
    if (up.status !== 0) {
      throw new Error(
        'TEST_STACK=containers: podman could not be set up. Run `bash infra/containers/podman.sh up` ' +
          'as root (installs podman, builds the local images, starts its Docker-API service), ' +
          'or point DOCKER_HOST at a Docker engine.',
      );
    }
  }
  const env = {
    DOCKER_HOST: dockerHost,
    // Containers share the host's network: every address is 127.0.0.1. Without this override
    // testcontainers would answer the engine's bridge gateway, a private address.
    TESTCONTAINERS_HOST_OVERRIDE: '127.0.0.1',
    // The reaper's image cannot be pulled without a registry; the setup removes its containers.
    TESTCONTAINERS_RYUK_DISABLED: process.env.TESTCONTAINERS_RYUK_DISABLED ?? 'true',
  };
  Object.assign(process.env, env);
  return {
    env,
    podman,
    // The local images take the same command and environment as the official ones.
    kafkaImage:
      process.env.TEST_KAFKA_IMAGE ??
      (podman ? 'localhost/read-model/kafka:4.4.0' : 'apache/kafka:4.4.0'),
    redisImage:
      process.env.TEST_REDIS_IMAGE ?? (podman ? 'localhost/read-model/redis:7' : 'redis:7'),
  };
}

/** Every container a test run starts carries this label; teardowns remove leftovers by it. */
export const TEST_LABEL = 'org.read-model.test';
