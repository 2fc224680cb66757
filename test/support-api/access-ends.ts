import { isDeepStrictEqual } from 'node:util';

// The contract for every way access ends (beyond.md §5, issue 15): refused within 1 s of the
// acknowledged write, on every path, and refused from then on. With the near-cache on, the
// change reaches the API by sharded pub/sub, asynchronously: an immediate read may still be a
// hit, so a test polls until the deadline, then checks the refusal holds.

export const ACCESS_END_DEADLINE_MS = 1_000;

/**
 * Polls `probe` until it answers `expected`, failing if that takes longer than 1 s from
 * `acknowledgedAtMs` (take it right after the awaited write); then probes again and expects the
 * same answer, so a refusal that comes and goes fails.
 */
export async function refusedWithin<T>(
  what: string,
  acknowledgedAtMs: number,
  probe: () => Promise<T>,
  expected: T,
): Promise<void> {
  const deadline = acknowledgedAtMs + ACCESS_END_DEADLINE_MS;
  let last: T;
  for (;;) {
    last = await probe();
    if (isDeepStrictEqual(last, expected)) break;
    if (Date.now() > deadline) {
      throw new Error(
        `${what}: still ${JSON.stringify(last)} ${Date.now() - acknowledgedAtMs} ms after the write, expected ${JSON.stringify(expected)} within ${ACCESS_END_DEADLINE_MS} ms`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  for (let i = 0; i < 3; i++) {
    const again = await probe();
    if (!isDeepStrictEqual(again, expected)) {
      throw new Error(`${what}: refused, then ${JSON.stringify(again)} again`);
    }
  }
}
