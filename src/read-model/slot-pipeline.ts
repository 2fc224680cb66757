import calculateSlot from 'cluster-key-slot';
import type { ChainableCommander, Cluster } from 'ioredis';
import { isCluster, type RedisClient } from './redis-connection.js';

// A pipeline that may span installations. On a single Redis it is the connection's pipeline: one
// round trip. ioredis refuses a cluster pipeline whose keys live on different nodes, so on a
// cluster the commands are queued, then sent as one pipeline per node (in their order within
// it, the only order that matters: one slot never spans nodes), and the replies put back in the
// order they were queued. Every queued command, script or not, names its key first.

type Reply = [Error | null, unknown];
interface Queued {
  readonly name: string;
  readonly args: unknown[];
}

export function slotPipeline<P extends ChainableCommander = ChainableCommander>(
  conn: RedisClient,
): P {
  if (!isCluster(conn)) return conn.pipeline() as P;
  const queued: Queued[] = [];
  const recorder: P = new Proxy({} as P, {
    get(_target, name) {
      if (name === 'exec') return () => execPerNode(conn, queued);
      if (name === 'length') return queued.length;
      // Not a promise: `await` must not take the recorder for one.
      if (typeof name !== 'string' || name === 'then') return undefined;
      return (...args: unknown[]) => {
        queued.push({ name, args });
        return recorder;
      };
    },
  });
  return recorder;
}

async function execPerNode(conn: Cluster, queued: readonly Queued[]): Promise<Reply[]> {
  const groups = new Map<string, number[]>();
  queued.forEach((command, i) => {
    const slot = calculateSlot(String(command.args[0]));
    // Slots not known yet (still connecting): one group per slot, ioredis routes each.
    const node = conn.slots[slot]?.join(',') ?? `slot ${slot}`;
    const group = groups.get(node);
    if (group) group.push(i);
    else groups.set(node, [i]);
  });
  const replies: Reply[] = new Array(queued.length);
  await Promise.all(
    [...groups.values()].map(async (indexes) => {
      const pipeline = conn.pipeline() as unknown as Record<string, (...a: unknown[]) => unknown>;
      for (const i of indexes) {
        const { name, args } = queued[i] as Queued;
        (pipeline[name] as (...a: unknown[]) => unknown).apply(pipeline, args);
      }
      const results = await (pipeline as unknown as ChainableCommander).exec();
      indexes.forEach((i, j) => {
        replies[i] = results?.[j] ?? [new Error('pipeline aborted'), null];
      });
    }),
  );
  return replies;
}
