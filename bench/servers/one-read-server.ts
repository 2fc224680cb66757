import { readFileSync } from 'node:fs';
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { keepRequestGarbageYoung } from '../../api/heap-tuning.js';
import { hgetallFlat } from '../../api/read-model/api-scripts.js';
import { devicesBody, energyFlowBody, installationsBody } from '../../api/routes/envelopes.js';
import { createKeys } from '../../src/read-model/keys.js';

// The miss baseline (issue 38): a bare Fastify route per endpoint that answers the same stored
// bytes as the API with exactly one Redis read per request: the least any server of this
// contract does when it holds nothing in memory. No authentication (it knows each key's
// application from a file), no access check, no data age, no ETag.
// Usage: node --import tsx bench/servers/one-read-server.ts <redisUrl> <prefix> <keys.json> <port> <basePath>
//   keys.json: { "<api key>": <applicationId>, ... }

// The API's heap setting (api/heap-tuning.ts): a baseline in the state it avoids would flatter it.
keepRequestGarbageYoung();
const [redisUrl, prefix, keysFile, port, basePath] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
];
const appOfKey = new Map(
  Object.entries(JSON.parse(readFileSync(keysFile, 'utf8')) as Record<string, number>),
);
const keys = createKeys(prefix);
const redis = new Redis(redisUrl);
const notFound = '{"valid":false,"error":"DOESNT_EXIST"}';
const idOf = (query: unknown) => Number((query as { installationId?: string }).installationId);

const app = Fastify({ logger: false });
app.get(`${basePath}/getInstallationCurrentEnergyFlow`, async (request, reply) => {
  const id = idOf(request.query);
  const data = await redis.hget(keys.flow(id), 'data');
  return reply.type('application/json').send(data === null ? notFound : energyFlowBody(id, data));
});
app.get(`${basePath}/getInstallationDevices`, async (request, reply) => {
  const id = idOf(request.query);
  const pairs = await hgetallFlat(redis, keys.devices(id));
  return reply.type('application/json').send(devicesBody(id, pairs));
});
app.get(`${basePath}/getInstallations`, async (request, reply) => {
  const appId = appOfKey.get(String(request.headers['api-key'] ?? ''));
  if (appId === undefined) return reply.type('application/json').send(notFound);
  const flat = await redis.zrangeBuffer(keys.appView(appId), '0', '999', 'WITHSCORES');
  const list = [];
  for (let i = 0; i + 1 < flat.length; i += 2)
    list.push({ id: Number(String(flat[i + 1])), json: flat[i] as Buffer });
  return reply.type('application/json').send(installationsBody(list));
});
app.get('/healthz', async () => ({ status: 'ok' }));

process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
await app.listen({ host: '127.0.0.1', port: Number(port) });
