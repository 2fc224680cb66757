import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { keepRequestGarbageYoung } from '../../api/heap-tuning.js';

// The read baseline: a bare Fastify route per endpoint that answers with the same JSON body the
// API served for that installation (or key), from an in-memory Map. No auth, no Redis.
// Usage: node --import tsx bench/servers/baseline-server.ts <bodies.json> <port> <basePath>

// The API's heap setting (api/heap-tuning.ts): a baseline in the state it avoids would flatter it.
keepRequestGarbageYoung();
const [file, port, basePath] = process.argv.slice(2) as [string, string, string];
const bodies = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Array<[string, string]>>;
const byEndpoint = new Map(Object.entries(bodies).map(([name, list]) => [name, new Map(list)]));
const notFound = '{"valid":false,"error":"DOESNT_EXIST"}';

const app = Fastify({ logger: false });
for (const endpoint of ['getInstallationDevices', 'getInstallationCurrentEnergyFlow']) {
  const map = byEndpoint.get(endpoint) ?? new Map<string, string>();
  app.get(`${basePath}/${endpoint}`, async (request, reply) => {
    const id = (request.query as { installationId?: string }).installationId ?? '';
    return reply.type('application/json').send(map.get(id) ?? notFound);
  });
}
const byKey = byEndpoint.get('getInstallations') ?? new Map<string, string>();
app.get(`${basePath}/getInstallations`, async (request, reply) => {
  const key = String(request.headers['api-key'] ?? '');
  return reply.type('application/json').send(byKey.get(key) ?? notFound);
});
app.get('/healthz', async () => ({ status: 'ok' }));

process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
await app.listen({ host: '127.0.0.1', port: Number(port) });
