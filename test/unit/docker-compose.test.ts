import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compose, readRepoFile } from '../support/compose.js';

// docker-compose.yml held against the Dockerfile, the configuration and the services it names:
// a Docker user's first command must not fail on a name, a port or a health check. (The image
// itself is built and run by test/containers/docker-image.test.ts.)

const { services, networks } = compose();
const dockerfile = readRepoFile('Dockerfile');
const config = readRepoFile('src/config.ts');
const app = ['topics', 'consumers', 'api', 'simulator', 'issue-key'];
const svc = (name: string) => {
  const s = services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
};
const env = (name: string) => svc(name).environment ?? {};
/** The port a `fetch('http://127.0.0.1:PORT/path')` health check probes, and the path. */
const probed = (name: string) => {
  const match = /http:\/\/127\.0\.0\.1:(\d+)(\/\w+)/.exec(
    svc(name).healthcheck?.test.join(' ') ?? '',
  );
  return match ? { port: match[1], path: match[2] } : undefined;
};

describe('docker-compose.yml against the Dockerfile', () => {
  it('builds every app service from the Dockerfile into one image', () => {
    for (const name of app) {
      expect(svc(name).build, name).toBe('.');
      expect(svc(name).image, name).toBe('installation-telemetry-read-model:local');
    }
  });

  it('runs the same way the Dockerfile does: node --import tsx on a file that exists', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(cmd && JSON.parse(cmd)).toEqual(svc('api').command);
    for (const name of app) {
      const argv = [...(svc(name).entrypoint ?? []), ...(svc(name).command ?? [])];
      // node itself: the npx and tsx wrappers turn a slow SIGTERM into a SIGKILL.
      expect(argv.slice(0, 3), name).toEqual(['node', '--import', 'tsx']);
      expect(existsSync(new URL(`../../${argv[3]}`, import.meta.url)), `${name}: ${argv[3]}`).toBe(
        true,
      );
    }
  });

  it('sets only variables src/config.ts reads', () => {
    for (const name of app) {
      for (const key of Object.keys(env(name))) {
        expect(config, `${name}: ${key}`).toMatch(new RegExp(`\\b${key}:`));
      }
    }
  });

  it('the image keeps what the compose services rely on: tsx installed, node for health checks', () => {
    // tsx is a devDependency: the image must install the full lockfile.
    expect(dockerfile).toMatch(/RUN npm ci(?! [^\n]*--omit=dev)/);
    expect(dockerfile).toMatch(/^USER node$/m);
  });
});

describe('docker-compose.yml services', () => {
  it('depends only on services it defines, healthy or completed as they can be', () => {
    for (const [name, s] of Object.entries(services)) {
      for (const [dep, { condition }] of Object.entries(s.depends_on ?? {})) {
        expect(services[dep], `${name} -> ${dep}`).toBeDefined();
        if (condition === 'service_healthy') expect(svc(dep).healthcheck, dep).toBeDefined();
        if (condition === 'service_completed_successfully') {
          expect((svc(dep) as { restart?: string }).restart, dep).toBe('no');
        }
      }
    }
  });

  it('probes the consumers and the API on the ports and readiness paths they listen on', () => {
    expect(probed('consumers')).toEqual({
      port: String(env('consumers').CONSUMER_HEALTH_PORT),
      path: '/readyz',
    });
    expect(probed('api')).toEqual({ port: String(env('api').API_PORT), path: '/readyz' });
    // Inside its container the API must listen beyond loopback to be published at all.
    expect(env('api').API_HOST).toBe('0.0.0.0');
  });

  it('publishes on the host loopback only, on the ports the native stack and the README use', () => {
    expect(svc('api').ports).toEqual([`127.0.0.1:8080:${env('api').API_PORT}`]);
    expect(svc('redis').ports).toEqual(['127.0.0.1:16379:6379']);
    expect(svc('kafka').ports).toEqual(['127.0.0.1:19092:19092']);
    for (const s of Object.values(services)) {
      for (const p of s.ports ?? []) expect(p).toMatch(/^127\.0\.0\.1:/);
    }
  });

  it('points the apps at the Kafka listener and the Redis port the services open', () => {
    const kafka = env('kafka');
    expect(String(kafka.KAFKA_ADVERTISED_LISTENERS)).toContain(
      `PLAINTEXT://${env('topics').KAFKA_BROKERS}`,
    );
    expect(String(kafka.KAFKA_ADVERTISED_LISTENERS)).toContain('HOST://127.0.0.1:19092');
    expect(String(kafka.KAFKA_AUTO_CREATE_TOPICS_ENABLE)).toBe('false');
    for (const name of app) {
      expect(env(name).KAFKA_BROKERS, name).toBe('kafka:9092');
      expect(env(name).REDIS_URL, name).toBe('redis://redis:6379');
    }
  });

  it('declares no networks of its own (compose default only)', () => {
    expect(networks).toBeUndefined();
    for (const s of Object.values(services)) expect(s.network_mode).toBeUndefined();
  });
});
