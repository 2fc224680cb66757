import { describe, expect, it } from 'vitest';
import { isolatedEnv, uniqueId } from '../support/stack.js';
import { errorLines, runOperatorCommand } from './support/operator-command.js';

// create-topics on topics that do not exist yet (kafkajs then waits for their leaders, the
// broker answering "not the leader" meanwhile), then again on the same: both succeed, list the
// topics, and print no error-level line.

describe('the create-topics command', () => {
  it('creates, then finds, the topics without a single error-level log line', async () => {
    const id = uniqueId('topics-cli');
    const env = { ...isolatedEnv(id), LOG_LEVEL: 'info' };
    for (const attempt of ['creates', 'finds']) {
      const run = await runOperatorCommand('create-topics', [], env);
      expect(run, `${attempt}: ${run.stderr}`).toMatchObject({ code: 0 });
      expect(run.stdout).toContain(`topic ${id}-telemetry: 6 partitions, cleanup.policy=delete`);
      expect(run.stdout).toContain(`topic ${id}-group.device-moves: 3 partitions`);
      expect(errorLines(run.stderr), attempt).toEqual([]);
      expect(errorLines(run.stdout), attempt).toEqual([]);
    }
  });
});
