import { Agent, createServer, get, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { waitFor } from '../support/stack.js';
import { testApi } from '../support-api/api-harness.js';
import { openSse, type SseStream } from '../support-api/sse-client.js';

// The playground proxy holds nothing it does not relay (issue 57): an answer it refuses closes
// the upstream response at once, a client gone closes the upstream request, and streams are
// relayed under caps of the proxy's own, over connections that are not loopback's. The attack
// that found it (hundreds of proxied streams from one key, then from three) leaves the key's
// direct stream and /healthz answering.
describe('docs proxy: streams and what it holds', () => {
  // 16 attacking connections + a direct stream + /healthz fit under 20 per client; the proxy's
  // own upstream connections on top would not, were they counted as 127.0.0.1's.
  const api = testApi({
    env: { API_MAX_CONNECTIONS_PER_CLIENT: '20', API_STREAM_HEARTBEAT_MS: '200' },
  });
  const base = api.config.api.basePath;
  const keys = [newApiKey(), newApiKey(), newApiKey()];
  const ID = 70;
  let origin = '';
  let fake: Server;
  let fakeUrl = '';
  /** Upstream responses the fake has open, by path; each resolves when its socket closes. */
  const fakeClosed = new Map<string, Promise<number>>();
  const streamPath = `${base}/streams/installationCurrentEnergyFlow?installationId=${ID}`;

  beforeAll(async () => {
    await api.ready();
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    await api.seed.installation(installation(ID));
    for (const key of keys)
      await api.seed.liveKey(key, { app: 7, installations: [installation(ID)] });
    await api.seed.devices(
      ID,
      [
        {
          category: 'battery',
          record: device('battery', ID, ID, Date.now() + 60_000, { soe: 40 }),
        },
      ],
      Date.now(),
      120,
    );
    // An upstream that answers at once and then never ends its body, one kind per path.
    fake = createServer((req, res) => {
      const path = req.url ?? '';
      fakeClosed.set(
        path,
        new Promise((resolve) => {
          const opened = Date.now();
          res.once('close', () => resolve(Date.now() - opened));
        }),
      );
      if (path.includes('events')) res.writeHead(200, { 'content-type': 'text/event-stream' });
      else if (path.includes('redirect')) res.writeHead(302, { location: '/elsewhere' });
      else if (path.includes('error')) res.writeHead(500, { 'content-type': 'text/plain' });
      else if (path.includes('silent'))
        return; // no headers: the client must give up
      else res.writeHead(200, { 'content-type': 'application/json' });
      res.write(path.includes('events') ? ': open\n\n' : '{"partial":');
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    fake.closeAllConnections();
    fake.close();
    await api.close();
  });

  it('closes the upstream answer at once when it does not relay it: non-JSON, redirects, errors', async () => {
    // A long timeout: only cancelling, not the timer, can close the upstream within the bound.
    const proxy = testApi({
      env: { API_DOCS_UPSTREAM_URL: fakeUrl, API_DOCS_PROXY_TIMEOUT_MS: '20000' },
    });
    try {
      for (const path of ['/events', '/redirect', '/error']) {
        const res = await proxy.app.inject({ url: `/docs/proxy${base}${path}` });
        expect(res.statusCode, path).toBe(502);
        expect(res.json()).toEqual({ valid: false, error: 'BAD_GATEWAY' });
        const closedAfter = await fakeClosed.get(`${base}${path}`);
        expect(closedAfter, path).toBeLessThan(2_000);
      }
    } finally {
      await proxy.close();
    }
  });

  it('closes the upstream request when the client goes away before the answer', async () => {
    const proxy = testApi({
      env: { API_DOCS_UPSTREAM_URL: fakeUrl, API_DOCS_PROXY_TIMEOUT_MS: '20000' },
    });
    try {
      const proxyOrigin = await proxy.app.listen({ host: '127.0.0.1', port: 0 });
      for (const path of ['/silent', '/json-never-ends']) {
        const req = get(`${proxyOrigin}/docs/proxy${base}${path}`);
        req.on('error', () => undefined);
        await waitFor('the upstream request', async () =>
          fakeClosed.has(`${base}${path}`) ? true : undefined,
        );
        req.destroy();
        const closedAfter = await fakeClosed.get(`${base}${path}`);
        expect(closedAfter, path).toBeLessThan(2_000);
      }
    } finally {
      await proxy.close();
    }
  });

  it('relays a stream while the client reads it, and releases the upstream stream when it leaves', async () => {
    const key = keys[0] as string;
    const proxied = await openSse(`${origin}/docs/proxy${streamPath}`, { 'api-key': key });
    expect(proxied.status).toBe(200);
    expect(proxied.headers['content-type']).toMatch(/^text\/event-stream/);
    const first = await proxied.next();
    expect(first.event).toBe('energyFlow');
    expect(JSON.parse(first.data)).toMatchObject({ installationId: ID });
    proxied.close();
    // The API's own stream gauge is back to what it was: the upstream stream ended too.
    await waitFor('the upstream stream to end', async () => {
      const metrics = await (await fetch(`${origin}/metrics`)).text();
      return /^api_streams_open 0$/m.test(metrics) ? true : undefined;
    });
  });

  it("relays a stream in Scalar's scalar_url form too, under the same caps as the path form", async () => {
    const key = keys[2] as string;
    const scalarForm = `/docs/proxy?${new URLSearchParams([['scalar_url', `${origin}${streamPath}`]])}`;
    const held: SseStream[] = [];
    try {
      for (let i = 0; i < 4; i++) {
        const stream = await openSse(`${origin}/docs/proxy${streamPath}`, { 'api-key': key });
        held.push(stream);
        expect(stream.status).toBe(200);
      }
      // The key's fifth proxied stream, in the other form: refused before any upstream request.
      const fifth = await fetch(`${origin}${scalarForm}`, { headers: { 'api-key': key } });
      expect(fifth.status).toBe(503);
      expect(await fifth.json()).toEqual({ valid: false, error: 'TOO_MANY_STREAMS' });
      held.pop()?.close();
      const viaScalar = await waitFor('a slot for the scalar_url form', async () => {
        const stream = await openSse(`${origin}${scalarForm}`, { 'api-key': key });
        if (stream.status === 200) return stream;
        stream.close();
        return undefined;
      });
      held.push(viaScalar);
      const first = await viaScalar.next();
      expect(first.event).toBe('energyFlow');
      expect(JSON.parse(first.data)).toMatchObject({ installationId: ID });
    } finally {
      for (const stream of held) stream.close();
    }
  });

  it('under hundreds of proxied streams from one key, then three, the direct stream and /healthz answer', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    const held: IncomingMessage[] = [];
    const statuses = new Map<number, number>();
    const attack = (key: string, count: number) =>
      Promise.all(
        Array.from(
          { length: count },
          () =>
            new Promise<void>((resolve) => {
              const req = get(
                `${origin}/docs/proxy${streamPath}`,
                { agent, headers: { 'api-key': key, accept: 'text/event-stream' } },
                (res) => {
                  const status = res.statusCode ?? 0;
                  statuses.set(status, (statuses.get(status) ?? 0) + 1);
                  if (status === 200)
                    held.push(res); // a stream: kept open, as an attacker would
                  else res.resume();
                  resolve();
                },
              );
              req.on('error', () => resolve());
            }),
        ),
      );
    const directAndHealth = async (key: string) => {
      const direct = await openSse(`${origin}${streamPath}`, { 'api-key': key });
      expect(direct.status).toBe(200);
      expect((await direct.next()).event).toBe('energyFlow');
      direct.close();
      const health = await fetch(`${origin}/healthz`);
      expect(health.status).toBe(200);
    };
    try {
      await attack(keys[0] as string, 300);
      // The proxy relays at most 4 streams for one key; the rest were refused before upstream.
      expect(statuses.get(200)).toBe(4);
      expect(statuses.get(503)).toBe(296);
      await directAndHealth(keys[0] as string);
      await Promise.all(keys.map((key) => attack(key, 260)));
      await directAndHealth(keys[1] as string);
      // Right after: the attacker leaves, its slots come back.
      for (const res of held.splice(0)) res.destroy();
      await waitFor('a proxied stream again', async () => {
        const again = await openSse(`${origin}/docs/proxy${streamPath}`, {
          'api-key': keys[0] as string,
        });
        again.close();
        return again.status === 200 ? true : undefined;
      });
      await directAndHealth(keys[2] as string);
      // No loopback client was refused a connection: the proxy's own were never 127.0.0.1's.
      const metrics = await (await fetch(`${origin}/metrics`)).text();
      expect(metrics).toMatch(/^api_dropped_connections_total\{reason="per-client"\} 0$/m);
      expect(metrics).not.toMatch(/^api_refused_requests_total\{error="TOO_MANY_CONNECTIONS"\}/m);
      expect([...statuses.keys()].sort()).toEqual([200, 503]);
    } finally {
      for (const res of held) res.destroy();
      agent.destroy();
    }
  });
});
