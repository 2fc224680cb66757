import { isCluster } from '../../src/read-model/redis-connection.js';
import { testRedis, waitFor } from './stack.js';

// What Redis ran, for tests that assert which commands a request costs: MONITOR on the one
// Redis, or on every master of the cluster. Each node reports in execution order, so once a
// marker sent after the request shows on every node, the request's commands have too.

export interface RedisMonitor {
  /** The commands naming a key under the prefix run since the last take (markers left out). */
  take(): Promise<string[][]>;
  stop(): void;
}

export async function monitorRedis(prefix: string): Promise<RedisMonitor> {
  const conn = testRedis();
  await conn.ping();
  const nodes = isCluster(conn) ? conn.nodes('master') : [conn];
  let seen: string[][] = [];
  const markersSeen = new Map<string, number>();
  const monitors = await Promise.all(nodes.map((node) => node.monitor()));
  for (const monitor of monitors) {
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (!args.some((a) => a.startsWith(prefix))) return;
      if (args[0]?.toLowerCase() === 'ping')
        markersSeen.set(args[1] as string, (markersSeen.get(args[1] as string) ?? 0) + 1);
      else seen.push(args);
    });
  }
  let markers = 0;
  return {
    async take() {
      const marker = `${prefix}marker:${++markers}`;
      await Promise.all(nodes.map((node) => node.ping(marker)));
      await waitFor('the marker in MONITOR', async () =>
        (markersSeen.get(marker) ?? 0) >= nodes.length ? true : undefined,
      );
      const taken = seen;
      seen = [];
      return taken;
    },
    stop() {
      for (const monitor of monitors) monitor.disconnect();
      conn.disconnect();
    },
  };
}

/**
 * Kills the pub/sub connections whose name ends with `name`, on the one Redis or on every master
 * (a cluster names a shard's subscriber `ioredis-cluster(ssubscriber):<name>`). Returns how many.
 */
export async function killSubscribers(name: string): Promise<number> {
  const conn = testRedis();
  try {
    await conn.ping();
    let killed = 0;
    for (const node of isCluster(conn) ? conn.nodes('master') : [conn]) {
      const list = String(await node.call('CLIENT', 'LIST', 'TYPE', 'pubsub'));
      for (const line of list.split('\n')) {
        const client = /^id=(\d+) .* name=(\S*) /.exec(line);
        if (!client?.[2]?.endsWith(name)) continue;
        await node.call('CLIENT', 'KILL', 'ID', client[1] as string);
        killed++;
      }
    }
    return killed;
  } finally {
    conn.disconnect();
  }
}
