import { readFileSync } from 'node:fs';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { Redis } from 'ioredis';
import { keepRequestGarbageYoung } from '../../api/heap-tuning.js';
import { devicesBody, energyFlowBody, installationsBody } from '../../api/http/envelopes.js';
import { flowLastUpdatedMs, latestLastSeenMs } from '../../api/http/last-modified.js';
import { negotiate, representationOf, sendNegotiated } from '../../api/http/representation.js';
import { flowScriptKeys, hgetallFlat, withApiScripts } from '../../api/reader/api-scripts.js';
import { createKeys } from '../../src/read-model/keys.js';

// The miss baseline (issue 38): a bare Fastify route per endpoint that answers the same stored
// bytes as the API with exactly one Redis read per request and nothing more: no authentication
// (it knows each key's application from a file), no access check, no data age, no ETag.
// Mode `contract`: the flow and devices reads also do the per-request work the contract asks of
// every answer, still in one read: the access check inside it (the API's scripts), the ETag,
// Last-Modified and the API's headers: the least a server of this contract does when it holds
// nothing in memory. What the API costs beyond that is the API's own.
// Usage: node --import tsx bench/servers/one-read-server.ts <redisUrl> <prefix> <keys.json> <port> <basePath> [one-read|contract]
//   keys.json: { "<api key>": <applicationId>, ... }

// The API's heap setting (api/heap-tuning.ts): a baseline in the state it avoids would flatter it.
keepRequestGarbageYoung();
const [redisUrl, prefix, keysFile, port, basePath, mode = 'one-read'] = process.argv.slice(2) as [
  string,
  string,
  string,
  string,
  string,
  string?,
];
const appOfKey = new Map(
  Object.entries(JSON.parse(readFileSync(keysFile, 'utf8')) as Record<string, number>),
);
const keys = createKeys(prefix);
const redis = withApiScripts(new Redis(redisUrl));
const notFound = '{"valid":false,"error":"DOESNT_EXIST"}';
const idOf = (query: unknown) => Number((query as { installationId?: string }).installationId);
const appOf = (request: FastifyRequest) => appOfKey.get(String(request.headers['api-key'] ?? ''));
const json = (reply: FastifyReply, body: string | Buffer) =>
  reply.type('application/json').send(body);

const oneRead = {
  async flow(request: FastifyRequest, reply: FastifyReply) {
    const id = idOf(request.query);
    const data = await redis.hget(keys.flow(id), 'data');
    return json(reply, data === null ? notFound : energyFlowBody(id, data));
  },
  async devices(request: FastifyRequest, reply: FastifyReply) {
    const id = idOf(request.query);
    return json(reply, devicesBody(id, await hgetallFlat(redis, keys.devices(id))));
  },
};
const contract = {
  async flow(request: FastifyRequest, reply: FastifyReply) {
    const id = idOf(request.query);
    const read = flowScriptKeys(keys, id);
    const stored = await redis.apiReadFlow(...read, appOf(request) ?? -1, Date.now());
    if (stored === null) return json(reply.code(404), notFound);
    const body = energyFlowBody(id, stored[0] ?? 'null');
    return sendNegotiated(
      reply,
      negotiate(request, representationOf(body, flowLastUpdatedMs(body))),
    );
  },
  async devices(request: FastifyRequest, reply: FastifyReply) {
    const id = idOf(request.query);
    const [acl, installation, , devices] = flowScriptKeys(keys, id);
    const app = appOf(request) ?? -1;
    const pairs = await redis.apiReadDevicesBuffer(acl, installation, devices, app, Date.now());
    if (pairs === null) return json(reply.code(404), notFound);
    const rep = representationOf(devicesBody(id, pairs), latestLastSeenMs(pairs));
    return sendNegotiated(reply, negotiate(request, rep));
  },
};
const reads = mode === 'contract' ? contract : oneRead;

const app = Fastify({ logger: false });
app.get(`${basePath}/getInstallationCurrentEnergyFlow`, reads.flow);
app.get(`${basePath}/getInstallationDevices`, reads.devices);
app.get(`${basePath}/getInstallations`, async (request, reply) => {
  const appId = appOf(request);
  if (appId === undefined) return json(reply, notFound);
  const flat = await redis.zrangeBuffer(keys.appView(appId), '0', '999', 'WITHSCORES');
  const list = [];
  for (let i = 0; i + 1 < flat.length; i += 2)
    list.push({ id: Number(String(flat[i + 1])), json: flat[i] as Buffer });
  return json(reply, installationsBody(list));
});
app.get('/healthz', async () => ({ status: 'ok' }));

process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
await app.listen({ host: '127.0.0.1', port: Number(port) });
