import { connect, type Socket } from 'node:net';
import type { Redis } from 'ioredis';
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

/**
 * `background`: connection names (suffixes) whose commands are no request's work and are left
 * out; by default the API's epoch watcher, which reads the marker every 500 ms on its own
 * connection and would otherwise land in a request's window now and then.
 */
export async function monitorRedis(
  prefix: string,
  background: readonly string[] = ['epoch-watch'],
): Promise<RedisMonitor> {
  const conn = testRedis();
  await conn.ping();
  const nodes = isCluster(conn) ? conn.nodes('master') : [conn];
  let seen: Array<{ args: string[]; source: string }> = [];
  const markersSeen = new Map<string, number>();
  const monitors = await Promise.all(
    nodes.map((node) =>
      monitorNode(node, (args, source) => {
        if (!args.some((a) => a.startsWith(prefix))) return;
        if (args[0]?.toLowerCase() === 'ping')
          markersSeen.set(args[1] as string, (markersSeen.get(args[1] as string) ?? 0) + 1);
        else seen.push({ args, source });
      }),
    ),
  );
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
      // The background connections are looked up now, not once at the start: a cluster client
      // opens its connection to a node only when it first sends there, maybe after the start.
      const ignored = await clientAddresses(nodes, background);
      return taken.filter((c) => !ignored.has(c.source)).map((c) => c.args);
    },
    stop() {
      for (const monitor of monitors) monitor.destroy();
      conn.disconnect();
    },
  };
}

/**
 * MONITOR on one node, over a socket of its own. Not ioredis's `monitor()`: it enters monitor
 * mode a turn after MONITOR's OK, so a command line arriving in the same read as that OK is taken
 * for a reply to nothing and fails the connection ("Command queue state error", as in
 * redis/ioredis#1981 and taskforcesh/bullmq#2505); here the OK is simply the first line.
 */
function monitorNode(
  node: Redis,
  onCommand: (args: string[], source: string) => void,
): Promise<Socket> {
  const { host, port, username, password } = node.options;
  return new Promise((resolve, reject) => {
    const socket = connect(port as number, host as string);
    const auth = password ? [username ? `AUTH ${username} ${password}` : `AUTH ${password}`] : [];
    let pendingOks = auth.length + 1;
    let buffer = '';
    socket.setEncoding('utf8');
    socket.once('error', reject);
    socket.on('connect', () => socket.write([...auth, 'MONITOR', ''].join('\r\n')));
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf('\r\n'); end >= 0; end = buffer.indexOf('\r\n')) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (pendingOks > 0) {
          if (line !== '+OK') return reject(new Error(`MONITOR refused: ${line}`));
          if (--pendingOks === 0) {
            socket.off('error', reject);
            socket.on('error', () => undefined);
            resolve(socket);
          }
          continue;
        }
        // +<time> [<db> <source>] "<arg>" "<arg>" ... (as ioredis parses it)
        const quote = line.indexOf('"');
        const space = line.indexOf(' ');
        const source = line.slice(space + 2, quote - 2).split(' ')[1] as string;
        const args = line
          .slice(quote + 1, -1)
          .split('" "')
          .map((arg) => arg.replace(/\\"/g, '"'));
        onCommand(args, source);
      }
    });
  });
}

/** The addresses (`ip:port`, as MONITOR reports a command's source) of the named connections. */
async function clientAddresses(
  nodes: readonly Redis[],
  names: readonly string[],
): Promise<Set<string>> {
  const out = new Set<string>();
  for (const node of nodes)
    for (const client of await namedClients(node, (name) => names.some((n) => name.endsWith(n))))
      out.add(client.addr);
  return out;
}

/** One node's connections (CLIENT LIST, of one TYPE if given) whose name `wanted` accepts. */
async function namedClients(
  node: Redis,
  wanted: (name: string) => boolean,
  ...type: string[]
): Promise<Array<{ readonly id: string; readonly addr: string }>> {
  const list = String(await node.call('CLIENT', 'LIST', ...type));
  const out: Array<{ id: string; addr: string }> = [];
  for (const line of list.split('\n')) {
    const client = /^id=(\d+) addr=(\S+) .* name=(\S*) /.exec(line);
    if (client && wanted(client[3] as string))
      out.push({ id: client[1] as string, addr: client[2] as string });
  }
  return out;
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
      for (const client of await namedClients(node, (n) => n.endsWith(name), 'TYPE', 'pubsub')) {
        await node.call('CLIENT', 'KILL', 'ID', client.id);
        killed++;
      }
    }
    return killed;
  } finally {
    conn.disconnect();
  }
}
