import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// Every process that talks to Kafka through kafkajs 2.2.4 would print Node 24's
// TimeoutNegativeWarning on start; only that warning is dropped, others still show.

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('dropNegativeTimeoutWarning', () => {
  it('drops the negative-timeout warning and nothing else', () => {
    const script = [
      "import { dropNegativeTimeoutWarning } from './consumers/kafka/negative-timeout.ts';",
      'dropNegativeTimeoutWarning();',
      'setTimeout(() => {}, -5);',
      "process.emitWarning('still shown', 'OtherWarning');",
    ].join('\n');
    const child = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: root, encoding: 'utf8' },
    );
    expect(child.status).toBe(0);
    expect(child.stderr).toContain('OtherWarning: still shown');
    expect(child.stderr).not.toContain('TimeoutNegativeWarning');
  });
});
