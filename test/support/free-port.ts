import { createServer } from 'node:net';

/** A loopback port nothing listens on now (the OS's pick; free until someone takes it). */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
