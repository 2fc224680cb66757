import type { Redis } from 'ioredis';
import { isCluster, type RedisClient } from '../../src/read-model/redis-connection.js';

// Under load many requests arrive in one turn of the event loop, each sending its own command.
// Holding the connection's writes until the I/O already waiting has been handled (setImmediate
// runs right after it) sends those commands in one socket write instead of one each: fewer
// system calls here and in Redis. A lone request waits for nothing but its own turn. Held
// commands run back to back in Redis and their replies come back together: worth it for replies
// up to a devices hash (~7 KB), not for view pages (api-reader.ts). A cluster sends through a
// connection per node: every node's is held, as the turn's commands may go to any.

type Stream = NonNullable<Redis['stream']>;

/** Returns `hold`, to call before sending a command: it corks the sockets once per turn. */
export function writeBatcher(redis: RedisClient): () => void {
  const connections = (): readonly Redis[] => (isCluster(redis) ? redis.nodes('all') : [redis]);
  let held: Stream[] | null = null;
  const release = () => {
    for (const stream of held ?? []) stream.uncork();
    held = null;
  };
  return () => {
    if (held !== null) return;
    held = [];
    for (const connection of connections()) {
      const stream = connection.stream;
      if (!stream) continue;
      stream.cork();
      held.push(stream);
    }
    setImmediate(release);
  };
}
