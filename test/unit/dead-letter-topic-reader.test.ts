import { describe, expect, it } from 'vitest';
import { readDeadlineMs } from '../../tools/dead-letters/topic-reader.js';

// How long the dead-letter tool waits for a topic: long enough for a large one, not forever.

describe('the read deadline', () => {
  it('is a minute plus a millisecond per message to read', () => {
    expect(readDeadlineMs(0n)).toBe(60_000);
    expect(readDeadlineMs(5_000_000n)).toBe(5_060_000);
  });

  it('stays within what setTimeout takes', () => {
    expect(readDeadlineMs(10n ** 12n)).toBe(2 ** 31 - 1);
  });
});
