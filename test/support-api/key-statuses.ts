import { waitFor } from '../support/stack.js';

// The API judges a key from two small records, the key's status and its application's
// (api/reader/key-access.ts), and keeps them in memory once it hears the access channel,
// which it subscribes to on its own connection after start. Tests that count what a request
// costs first wait until a key is judged from memory, then measure.

/** Whether a command (as MONITOR shows it) reads a key's or an application's status record. */
export const readsStatus = (args: readonly string[]): boolean =>
  /\{[ka][^}]*\}:status$/.test(args[1] ?? '');

/**
 * Runs `request` (which returns the commands it cost) until one reads no status record: the
 * statuses it needs are then kept in memory.
 */
export async function untilStatusesKept(request: () => Promise<string[][]>): Promise<void> {
  await waitFor('the key judged from memory', async () =>
    (await request()).some(readsStatus) ? undefined : true,
  );
}
