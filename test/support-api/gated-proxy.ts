import { connect, createServer, type Socket } from 'node:net';

// A TCP proxy to Redis for tests that need a request to be in flight at a chosen moment: while
// held, what clients send is kept back (replies still flow), and let go in order on release.

export interface GatedProxy {
  readonly url: string;
  /** Writes kept back while held. */
  readonly pending: number;
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

export async function startGatedProxy(target: string): Promise<GatedProxy> {
  const { hostname, port } = new URL(target);
  let held = false;
  const waiting: Array<() => void> = [];
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(Number(port), hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => undefined);
      s.on('close', () => {
        sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    upstream.pipe(client);
    client.on('data', (chunk) => {
      if (held) waiting.push(() => upstream.write(chunk));
      else upstream.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no port');
  return {
    url: `redis://127.0.0.1:${address.port}`,
    get pending() {
      return waiting.length;
    },
    hold() {
      held = true;
    },
    release() {
      held = false;
      for (const write of waiting.splice(0)) write();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
