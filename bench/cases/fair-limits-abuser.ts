import { Agent, type ClientRequest, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { BASE_PATH as BASE } from '../lib/stack.js';

// The abusive client of bench/cases/fair-limits.ts, in a process of its own so its event loop
// is not the probes' and the normal client's: from one source address, opens the streams (one
// key, round-robin over the ids), then the idle sockets, prints one JSON line with what it got,
// and holds everything until SIGTERM.
//   node --import tsx bench/cases/fair-limits-abuser.ts <port> <address> <key> <ids> <sockets> <streams>

const [port, address, key, idList, socketCount, streamCount] = process.argv.slice(2);
const PORT = Number(port);
const ids = String(idList).split(',');
const sockets: Socket[] = [];
const requests: ClientRequest[] = [];
const statuses: Record<string, number> = {};
const count = (status: number) => {
  statuses[status] = (statuses[status] ?? 0) + 1;
};
const agent = new Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });

await Promise.all(
  Array.from(
    { length: Number(streamCount) },
    (_, i) =>
      new Promise<void>((resolve) => {
        const url = `http://127.0.0.1:${PORT}${BASE}/streams/installationCurrentEnergyFlow?installationId=${ids[i % ids.length]}`;
        const req = request(url, { agent, localAddress: address, headers: { 'api-key': key } });
        req.on('response', (res) => {
          count(res.statusCode ?? 0);
          res.resume();
          resolve();
        });
        req.on('error', () => {
          count(0);
          resolve();
        });
        req.setTimeout(10_000, () => req.destroy());
        req.end();
        requests.push(req);
      }),
  ),
);
await Promise.all(
  Array.from({ length: Number(socketCount) }, () => {
    const socket = connect({ port: PORT, host: '127.0.0.1', localAddress: address });
    socket.on('error', () => undefined);
    sockets.push(socket);
    return new Promise((resolve) => socket.once('connect', resolve).once('close', resolve));
  }),
);
// The refused ones have their second to send a request and are closed.
await new Promise((resolve) => setTimeout(resolve, 1_500));
process.stdout.write(`${JSON.stringify({ sockets: sockets.length, streams: statuses })}\n`);
process.on('SIGTERM', () => {
  for (const r of requests) r.destroy();
  for (const s of sockets) s.destroy();
  process.exit(0);
});
setInterval(() => undefined, 60_000);
