import { existsSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { compose, readRepoFile } from '../support/compose.js';

// docker-compose.yml held against the Dockerfile, the configuration and the services it names:
// a Docker user's first command must not fail on a name, a port or a health check. (The image
// itself is built and run by test/containers/docker-image.test.ts.)

const { services, networks } = compose();
const dockerfile = readRepoFile('Dockerfile');
const config = readRepoFile('src/config.ts');
const packageJson = JSON.parse(readRepoFile('package.json')) as {
  dependencies?: Record<string, string>;
};
const buildConfig = JSON.parse(readRepoFile('tsconfig.build.json')) as {
  include: string[];
  exclude: string[];
};
/** True when `npm run build` compiles the source file (a path relative to the repository). */
const built = (file: string) =>
  buildConfig.include.some((dir) => file.startsWith(`${dir}/`)) &&
  !buildConfig.exclude.some((path) => file === path || file.startsWith(`${path}/`));
const builtSources = (): string[] =>
  buildConfig.include.flatMap((dir) =>
    readdirSync(new URL(`../../${dir}/`, import.meta.url), { recursive: true, encoding: 'utf8' })
      .map((entry) => `${dir}/${entry}`)
      .filter((file) => file.endsWith('.ts') && built(file)),
  );
// A value import (`import type` is erased by the build): static, side effect only, or dynamic.
const RUNTIME_IMPORT = /(?:^import (?!type )(?:[^;]*? from )?|\bimport\()'([^']+)'/gm;
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

  it('runs the same way the Dockerfile does: node on a compiled file of the build, no tsx', () => {
    const cmd = /^CMD (\[.*\])$/m.exec(dockerfile)?.[1];
    expect(cmd && JSON.parse(cmd)).toEqual(svc('api').command);
    for (const name of app) {
      const argv = [...(svc(name).entrypoint ?? []), ...(svc(name).command ?? [])];
      // node itself: the npx and tsx wrappers turn a slow SIGTERM into a SIGKILL; and the image
      // has no tsx (a devDependency) to load TypeScript with.
      expect(argv[0], name).toBe('node');
      expect(argv.join(' '), name).not.toMatch(/tsx|\.ts\b/);
      const file = /^dist\/(.+)\.js$/.exec(argv[1] ?? '')?.[1];
      expect(file, `${name}: ${argv[1]} is not a file under dist/`).toBeDefined();
      // The build emits dist/<path>.js from <path>.ts when tsconfig.build.json compiles it.
      expect(existsSync(new URL(`../../${file}.ts`, import.meta.url)), `${name}: ${file}.ts`).toBe(
        true,
      );
      expect(built(`${file}.ts`), `${name}: ${file}.ts is not compiled by the build`).toBe(true);
    }
  });

  it('sets only variables src/config.ts reads', () => {
    for (const name of app) {
      for (const key of Object.keys(env(name))) {
        expect(config, `${name}: ${key}`).toMatch(new RegExp(`\\b${key}:`));
      }
    }
  });

  it('the image builds dist/ in a build stage and runs on production dependencies only', () => {
    const stages = dockerfile.split(/^FROM /m).slice(1);
    expect(stages).toHaveLength(2);
    const [build, runtime] = stages as [string, string];
    expect(build).toMatch(/RUN npm ci(?! [^\n]*--omit=dev)/);
    expect(build).toMatch(/RUN npm run build$/m);
    expect(runtime).toMatch(/RUN npm ci --omit=dev/);
    expect(runtime).toMatch(/^COPY --from=build \/app\/dist dist$/m);
    // node for the health checks, and not root.
    expect(runtime).toMatch(/^USER node$/m);
  });

  it('compiled code imports only production dependencies (the image has no others)', () => {
    const dependencies = Object.keys(packageJson.dependencies ?? {});
    for (const file of builtSources()) {
      for (const [, specifier] of readRepoFile(file).matchAll(RUNTIME_IMPORT)) {
        if (!specifier || specifier.startsWith('.') || specifier.startsWith('node:')) continue;
        const name = specifier.startsWith('@')
          ? specifier.split('/').slice(0, 2).join('/')
          : (specifier.split('/')[0] ?? specifier);
        expect(dependencies, `${file} imports ${specifier}`).toContain(name);
      }
    }
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
    // The API's probe on its ops listener, which a flood of the API port cannot reach.
    expect(probed('api')).toEqual({ port: String(env('api').API_OPS_PORT), path: '/readyz' });
    expect(env('api').API_OPS_PORT).not.toBe(env('api').API_PORT);
    // Inside its container the API must listen beyond loopback to be published at all.
    expect(env('api').API_HOST).toBe('0.0.0.0');
  });

  it('keeps the probe listeners on the container’s loopback, off the shared network', () => {
    expect(env('consumers').CONSUMER_HEALTH_HOST).toBe('127.0.0.1');
    expect(env('api').API_OPS_HOST).toBe('127.0.0.1');
    for (const name of ['consumers', 'api']) {
      expect((svc(name) as { expose?: unknown }).expose, name).toBeUndefined();
    }
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
