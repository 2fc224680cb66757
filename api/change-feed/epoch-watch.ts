import { readEpoch } from '../../src/read-model/epoch.js';
import type { ReadModelKeys } from '../../src/read-model/keys.js';
import { duplicateConnection, type RedisClient } from '../../src/read-model/redis-connection.js';

// A rebuild (tools/rebuild.ts) deletes the read model without announcing each key, then
// writes a new epoch marker; a wipe takes the marker too. Whatever the near-cache or a stream
// learnt before may then be stale, grants included, and no announcement will say so. Polling
// the one marker key is cheaper and simpler than a rebuild announcing every installation: when
// its id changes (or it goes), `onChange` runs. The period keeps revocation by a rebuild within
// the 1 s every other path keeps. On a connection of its own, so the readers' connection carries
// only what requests send.

export const EPOCH_CHECK_MS = 500;

export function watchEpoch(deps: {
  redis: RedisClient;
  keys: ReadModelKeys;
  onChange: () => void;
  periodMs?: number;
}): { stop(): Promise<void> } {
  const conn = duplicateConnection(deps.redis, { connectionName: 'epoch-watch' });
  conn.on('error', () => undefined);
  let seen: string | null | undefined;
  let busy = false;
  const check = async () => {
    if (busy) return;
    busy = true;
    try {
      const id = (await readEpoch(conn, deps.keys))?.id ?? null;
      if (seen !== undefined && id !== seen) deps.onChange();
      seen = id;
    } catch {
      // Redis unreachable: the change subscriber's connection drops too and resets the holders.
    } finally {
      busy = false;
    }
  };
  void check();
  const timer = setInterval(check, deps.periodMs ?? EPOCH_CHECK_MS);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await conn.quit().catch(() => conn.disconnect());
    },
  };
}
