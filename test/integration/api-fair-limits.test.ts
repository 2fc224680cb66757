import type { Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type OpsListener, startOpsListener } from '../../api/ops/ops-listener.js';
import { writeEpoch } from '../../src/read-model/epoch.js';
import { createKeys } from '../../src/read-model/keys.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { testApi } from '../support-api/api-harness.js';
import { getRequest, heldSocket, type RawAnswer, rawRequest } from '../support-api/raw-http.js';
import { openSse, type SseStream } from '../support-api/sse-client.js';

// One client cannot take the API from everyone else (docs/security.md, "Connections" and
// "Streams"): each flood comes from one source address in 127.0.0.0/8, and a second client on
// another address, and the probes, must still be answered.

const ABUSER = '127.0.0.2';
const OTHER = '127.0.0.3';

describe('fair limits: one client floods, the others are served', () => {
  const api = testApi({
    env: {
      API_MAX_CONNECTIONS: '40',
      API_MAX_CONNECTIONS_PER_CLIENT: '10',
      // Long, so that only the limits under test close anything.
      API_KEEP_ALIVE_TIMEOUT_MS: '60000',
      API_SOCKET_IDLE_TIMEOUT_MS: '60000',
      API_HEADERS_TIMEOUT_MS: '30000',
      API_REQUEST_TIMEOUT_MS: '30000',
      API_STREAMS_PER_KEY: '3',
      API_STREAMS_PER_APPLICATION: '4',
    },
  });
  const base = api.config.api.basePath;
  const key = newApiKey();
  const sameApp = newApiKey();
  const otherApp = newApiKey();
  const held: Socket[] = [];
  const streams: SseStream[] = [];
  let port = 0;
  let origin = '';

  const ask = (path: string, from = OTHER, extra: string[] = []): Promise<RawAnswer> =>
    rawRequest(port, getRequest(path, extra), { localAddress: from, untilAnswer: true });
  /** Probes and a keyed read from another client: every one answered 200. */
  const othersServed = async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      expect((await ask(path)).status, path).toBe(200);
    }
    const read = await ask(`${base}/getInstallations`, OTHER, [`Api-Key: ${otherApp}`]);
    expect(read.status).toBe(200);
  };
  const stream = (apiKey: string, from = ABUSER) =>
    openSse(
      `${origin}${base}/streams/installationCurrentEnergyFlow?installationId=700`,
      { 'api-key': apiKey },
      { localAddress: from, agent: false },
    ).then((s) => {
      streams.push(s);
      return s;
    });

  beforeAll(async () => {
    await api.ready();
    // A built read model: /readyz answers 200.
    await writeEpoch(api.redis, createKeys(api.prefix), Date.now(), { complete: true });
    await api.seed.installation(installation(700));
    await api.seed.devices(
      700,
      [{ category: 'battery', record: device('battery', 700, 700, Date.now(), { soe: 50 }) }],
      Date.now(),
      300,
    );
    await api.seed.liveKey(key, { app: 7, installations: [installation(700)] });
    await api.seed.liveKey(sameApp, { app: 7, installations: [installation(700)] });
    await api.seed.liveKey(otherApp, { app: 8, installations: [installation(700)] });
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    port = Number(new URL(origin).port);
  });
  afterEach(async () => {
    for (const s of held.splice(0)) s.destroy();
    for (const s of streams.splice(0)) s.close();
    await expect.poll(() => connections(api.app.server)).toBe(0);
  });
  afterAll(() => api.close());

  const hold = async (count: number, from: string, bytes = '') => {
    for (let i = 0; i < count; i++) held.push(await heldSocket(port, from, bytes));
  };

  it('idle sockets: one address holds its cap, is refused in the envelope beyond it', async () => {
    await hold(60, ABUSER);
    await expect.poll(() => connections(api.app.server)).toBeLessThanOrEqual(10 + 64);
    await othersServed();
    const refused = await ask('/healthz', ABUSER);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(JSON.parse(refused.body)).toEqual({ valid: false, error: 'TOO_MANY_CONNECTIONS' });
  });

  it('slow sockets: headers trickled on every socket one address may open', async () => {
    await hold(60, ABUSER, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n');
    await othersServed();
  });

  it('reconnect loop: an address reopening whatever the server closes', async () => {
    let running = true;
    const loop = async () => {
      while (running) {
        const socket = await heldSocket(port, ABUSER, 'GET /healthz HTTP/1.1\r\n');
        held.push(socket);
        await new Promise((resolve) => socket.once('close', resolve));
      }
    };
    // More loops than the whole listener holds: without a cap per client they would take it.
    const loops = Array.from({ length: 60 }, loop);
    try {
      await expect.poll(() => connections(api.app.server)).toBeGreaterThanOrEqual(10);
      for (let i = 0; i < 20; i++) expect((await ask('/readyz')).status).toBe(200);
      await othersServed();
    } finally {
      running = false;
      for (const s of held) s.destroy();
      await Promise.all(loops);
    }
  });

  it('a full server: a newcomer takes an idle connection of the biggest holder', async () => {
    for (const from of ['127.0.0.4', '127.0.0.5', '127.0.0.6', '127.0.0.7']) await hold(10, from);
    await expect.poll(() => connections(api.app.server)).toBe(40);
    await othersServed();
    const metrics = (await ask('/metrics')).body;
    expect(metrics).toMatch(/api_dropped_connections_total\{reason="reclaimed"\} [1-9]/);
  });

  it('streams: capped per key and per application with 429 and the RateLimit fields', async () => {
    for (let i = 0; i < 3; i++) expect((await stream(key)).status).toBe(200);
    const over = await stream(key);
    expect(over.status).toBe(429);
    expect(JSON.parse(over.body)).toEqual({ valid: false, error: 'RATE_LIMITED' });
    expect(over.headers['ratelimit-policy']).toBe('"streams-per-key";q=3;qu="concurrent-requests"');
    expect(over.headers.ratelimit).toBe('"streams-per-key";r=0;t=5');
    expect(over.headers['retry-after']).toBe('5');
    // Another key of the same application: one more, then the application's cap.
    expect((await stream(sameApp)).status).toBe(200);
    const appOver = await stream(sameApp);
    expect(appOver.status).toBe(429);
    expect(appOver.headers['ratelimit-policy']).toMatch(/^"streams-per-application";q=4;/);
    // Others, and the probes, are served; another application still streams.
    await othersServed();
    expect((await stream(otherApp, OTHER)).status).toBe(200);
    // A closed stream frees its slot.
    streams[0]?.close();
    await expect.poll(async () => (await stream(key)).status).toBe(200);
  });
});

describe('fair limits behind a trusted proxy', () => {
  const PROXY = '127.0.0.8';
  const api = testApi({
    env: {
      API_MAX_CONNECTIONS_PER_CLIENT: '2',
      API_TRUSTED_PROXIES: PROXY,
      API_KEEP_ALIVE_TIMEOUT_MS: '60000',
    },
  });
  const base = api.config.api.basePath;
  const key = newApiKey();
  const streams: SseStream[] = [];
  let origin = '';

  beforeAll(async () => {
    await api.ready();
    await api.seed.installation(installation(701));
    await api.seed.liveKey(key, { app: 9, installations: [installation(701)] });
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    for (const s of streams) s.close();
    await api.close();
  });

  it('holds the proxy to the global limit only, and counts streams per forwarded client', async () => {
    const open = async (client: string) => {
      const s = await openSse(
        `${origin}${base}/streams/installationCurrentEnergyFlow?installationId=701`,
        { 'api-key': key, 'x-forwarded-for': `6.6.6.6, ${client}` },
        { localAddress: PROXY, agent: false },
      );
      streams.push(s);
      return s.status;
    };
    // Four connections from the proxy, over the per-client cap of 2: all served.
    expect([await open('198.51.100.1'), await open('198.51.100.1')]).toEqual([200, 200]);
    expect(await open('198.51.100.1')).toBe(429);
    expect([await open('198.51.100.2'), await open('198.51.100.2')]).toEqual([200, 200]);
    expect(streams.at(2)?.headers['ratelimit-policy']).toMatch(/^"streams-per-client";q=2;/);
  });
});

function connections(server: import('node:net').Server): Promise<number> {
  return new Promise((resolve, reject) =>
    server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );
}

describe('fair limits: a server full of streams', () => {
  const api = testApi({ env: { API_MAX_CONNECTIONS: '3', API_KEEP_ALIVE_TIMEOUT_MS: '60000' } });
  const base = api.config.api.basePath;
  const key = newApiKey();
  const streams: SseStream[] = [];
  let origin = '';
  const stream = async (from: string) => {
    const s = await openSse(
      `${origin}${base}/streams/installationCurrentEnergyFlow?installationId=702`,
      { 'api-key': key },
      { localAddress: from, agent: false },
    );
    streams.push(s);
    return s;
  };

  beforeAll(async () => {
    await api.ready();
    await api.seed.installation(installation(702));
    await api.seed.liveKey(key, { app: 10, installations: [installation(702)] });
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    for (const s of streams) s.close();
    await api.close();
  });

  it('closes the biggest holder’s oldest stream for another client, refuses its own with 503', async () => {
    const port = Number(new URL(origin).port);
    const mine = [await stream(ABUSER), await stream(ABUSER), await stream(ABUSER)];
    for (const s of mine) expect(s.status).toBe(200);
    // Full, none idle: another address gets in, the oldest stream is closed for it.
    const other = await rawRequest(port, getRequest('/healthz'), {
      localAddress: OTHER,
      untilAnswer: true,
    });
    expect(other.status).toBe(200);
    await mine[0]?.closed(2_000);
    // Its answer closed that connection: room for one more stream, then the server is full of
    // the streamer's own busy connections and it is refused in the envelope.
    await expect.poll(() => connections(api.app.server)).toBe(2);
    expect((await stream(ABUSER)).status).toBe(200);
    const busy = await rawRequest(port, getRequest('/healthz'), { localAddress: ABUSER });
    expect(busy.status).toBe(503);
    expect(busy.headers['retry-after']).toBe('1');
    expect(JSON.parse(busy.body)).toEqual({ valid: false, error: 'SERVER_BUSY' });
  });
});

describe('the API ops listener', () => {
  // No cap per client: one address can take every connection of the API port.
  const api = testApi({
    env: { API_MAX_CONNECTIONS: '20', API_MAX_CONNECTIONS_PER_CLIENT: '0' },
  });
  const held: Socket[] = [];
  let ops: OpsListener;
  let port = 0;

  beforeAll(async () => {
    await api.ready();
    await writeEpoch(api.redis, createKeys(api.prefix), Date.now(), { complete: true });
    ops = await startOpsListener(api.app, { host: '127.0.0.1', port: 0 });
    port = Number(new URL(await api.app.listen({ host: '127.0.0.1', port: 0 })).port);
  });
  afterAll(async () => {
    for (const s of held) s.destroy();
    await ops.close();
    await api.close();
  });

  it('answers the probes and metrics while the API port is full, and nothing else', async () => {
    // The API port full: 20 of 20, all from one address.
    for (let i = 0; i < 20; i++) held.push(await heldSocket(port, ABUSER, 'GET / HTTP/1.1\r\n'));
    await expect.poll(() => connections(api.app.server)).toBe(20);
    const at = (path: string) =>
      rawRequest(ops.port, getRequest(path), { localAddress: ABUSER, untilAnswer: true });
    expect((await at('/healthz')).status).toBe(200);
    expect((await at('/readyz')).body).toBe('{"status":"ready"}');
    expect((await at('/metrics')).body).toContain('api_requests_total');
    const other = await at(`${api.config.api.basePath}/getInstallations`);
    expect(other.status).toBe(404);
    expect(JSON.parse(other.body)).toEqual({ valid: false, error: 'NOT_FOUND' });
  });
});
