import { configDefaults, defineConfig } from 'vitest/config';

// Tests that need Kafka and Redis share one stack (test/setup/global-setup.ts): the native one by
// default, testcontainers with TEST_STACK=containers, which also runs the Docker-image tests.
const containers = process.env.TEST_STACK === 'containers';
// TEST_REDIS=cluster runs the suites on a Redis Cluster. Left out there: the tests that count
// socket writes on the one connection a single Redis has (round trips per request or batch).
const cluster = process.env.TEST_REDIS === 'cluster';
const singleRedisOnly = [
  'test/integration/api-round-trips.test.ts',
  'test/integration/consumers-device-store.test.ts',
];
// Tests that read the process's own Buffer memory (process.memoryUsage().arrayBuffers): in a
// fork, the runner's IPC reads of a message still arriving count too (failing runs of the
// near-cache memory test held exactly 38 and 39 x 64 KiB, the size of one pipe read, beyond
// what passing runs held); a worker thread's Buffers are its own.
const ownMemory = ['test/integration/api-near-cache-memory.test.ts'];
const stack = {
  globalSetup: ['test/setup/global-setup.ts'],
  testTimeout: 60_000,
  hookTimeout: 90_000,
};

export default defineConfig({
  test: {
    projects: [
      {
        // Run beside the system tests, a CPU-bound unit test (20,000 events through zod, promtool)
        // takes several times its quiet 1-3 s: 5 s (the default) failed one on a busy machine.
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], testTimeout: 30_000 },
      },
      {
        test: {
          name: 'system',
          include: [
            'test/integration/**/*.test.ts',
            'test/e2e/**/*.test.ts',
            ...(containers ? ['test/containers/**/*.test.ts'] : []),
            // Take a master down, move a slot: run alone, one file at a time (npm run test:failover).
            ...(cluster ? ['test/cluster/**/*.test.ts'] : []),
          ],
          exclude: [...configDefaults.exclude, ...ownMemory, ...(cluster ? singleRedisOnly : [])],
          ...stack,
        },
      },
      {
        test: { name: 'system-threads', include: ownMemory, pool: 'threads', ...stack },
      },
      {
        // The contracts through the generators integrators use (Modelina, @asyncapi/cli,
        // @hey-api/openapi-ts, OpenAPI Generator) and their compilers (tsc, javac, Maven): slow
        // on a first run, which installs the tools under .local/generators.
        test: {
          name: 'generators',
          include: ['test/generators/**/*.test.ts'],
          testTimeout: 600_000,
          hookTimeout: 120_000,
        },
      },
      {
        // Its own project so Chromium is installed only when browser tests run.
        test: {
          name: 'browser',
          include: ['test/browser/**/*.test.ts'],
          ...stack,
          globalSetup: ['test/setup/chromium-setup.ts', ...stack.globalSetup],
        },
      },
    ],
  },
});
