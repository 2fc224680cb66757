import { defineConfig } from 'vitest/config';

// Tests that need Kafka and Redis share one stack (test/setup/global-setup.ts): the native one by
// default, testcontainers with TEST_STACK=containers, which also runs the Docker-image tests.
const containers = process.env.TEST_STACK === 'containers';
const stack = {
  globalSetup: ['test/setup/global-setup.ts'],
  testTimeout: 60_000,
  hookTimeout: 90_000,
};

export default defineConfig({
  test: {
    projects: [
      {
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'] },
      },
      {
        test: {
          name: 'system',
          include: [
            'test/integration/**/*.test.ts',
            'test/e2e/**/*.test.ts',
            ...(containers ? ['test/containers/**/*.test.ts'] : []),
          ],
          ...stack,
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
