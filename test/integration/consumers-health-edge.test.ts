import type { Socket } from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  HEALTH_LIMITS,
  type HealthServer,
  startHealthServer,
} from '../../consumers/health-server.js';
import { testLogger } from '../support/stack.js';
import { getRequest, heldSocket, rawRequest, stalledReader } from '../support-api/raw-http.js';

// The consumers' health server on the shared edge (src/http/edge-server.ts): what Node would
// answer with an empty body is JSON, a slow client is cut, connections are capped.
describe('consumers health server edge', () => {
  let health: HealthServer;
  const BOUND_MS = 500 + 1_000;

  beforeAll(async () => {
    health = await startHealthServer({
      port: 0,
      registry: new Registry(),
      isReady: async () => true,
      logger: testLogger,
      limits: {
        ...HEALTH_LIMITS,
        headersTimeoutMs: 600,
        requestTimeoutMs: 1_200,
        maxConnections: 2,
      },
    });
  });
  afterAll(() => health.close());

  const json = (text: string) => JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4));

  it('answers protocol errors in JSON, not Node’s empty 400 and 417', async () => {
    for (const [request, status] of [
      ['GET /healthz HTTP/1.1\r\n\r\n', 400],
      [getRequest('/healthz', ['Expect: 999-bogus']), 417],
      ['NOT HTTP\r\n\r\n', 400],
      ['GET /healthz HTTP/1.1\r\nHost: [\r\n\r\n', 400],
      ['CONNECT a:1 HTTP/1.1\r\nHost: a\r\n\r\n', 405],
    ] as const) {
      const answer = await rawRequest(health.port, request);
      expect(answer.status, request).toBe(status);
      expect(answer.headers['content-type']).toMatch(/^application\/json/);
      expect(json(answer.text)).toEqual({ status: expect.any(String) });
    }
    expect((await rawRequest(health.port, getRequest('/healthz'))).status).toBe(200);
  });

  it('cuts a slowloris at the headers timeout', async () => {
    const trickle = ['GET /healthz HTTP/1.1\r\nHost: x\r\n', ...Array(40).fill('X-Slow: 1\r\n')];
    const answer = await rawRequest(health.port, trickle, { gapMs: 100, waitMs: 5_000 });
    expect(answer.status).toBe(408);
    expect(answer.closed).toBe(true);
    expect(answer.elapsedMs).toBeLessThan(600 + BOUND_MS);
  });

  it('holds a modest number of connections, an idle one traded for a probe', async () => {
    // Connected in order: the server accepts them before the third.
    const held = await Promise.all(
      [0, 1].map(() => stalledReader(health.port, 'GET /healthz HTTP/1.1\r\n')),
    );
    expect((await rawRequest(health.port, getRequest('/healthz'))).status).toBe(200);
    // The oldest idle one made room: closed, with nothing written to it.
    const first = held[0] as Socket;
    let written = '';
    first.on('data', (chunk) => {
      written += chunk;
    });
    first.resume();
    await new Promise((resolve) => first.once('close', resolve));
    expect(written).toBe('');
    for (const socket of held) socket.destroy();
  });
});

// The container's health check must not be starved by a neighbour on the compose network:
// HEALTH_LIMITS as shipped, flooded from other source addresses in 127.0.0.0/8.
describe('consumers health server under a flood', () => {
  let health: HealthServer;
  const held: Socket[] = [];
  const probe = async (path: string) =>
    (await rawRequest(health.port, getRequest(path), { untilAnswer: true })).status;

  beforeAll(async () => {
    health = await startHealthServer({
      port: 0,
      registry: new Registry(),
      isReady: async () => true,
      logger: testLogger,
    });
  });
  afterEach(() => {
    for (const socket of held.splice(0)) socket.destroy();
  });
  afterAll(() => health.close());

  it('answers its probes while one address opens every connection it can', async () => {
    for (let i = 0; i < HEALTH_LIMITS.maxConnections; i++) {
      held.push(await heldSocket(health.port, '127.0.0.2'));
    }
    for (const path of ['/healthz', '/readyz', '/metrics']) expect(await probe(path)).toBe(200);
    const refused = await rawRequest(health.port, getRequest('/readyz'), {
      localAddress: '127.0.0.2',
    });
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
  });

  it('answers its probes while several addresses hold all its connections', async () => {
    for (const from of ['127.0.0.2', '127.0.0.3', '127.0.0.4', '127.0.0.5']) {
      for (let i = 0; i < HEALTH_LIMITS.maxConnectionsPerClient; i++) {
        held.push(await heldSocket(health.port, from));
      }
    }
    for (let i = 0; i < 10; i++) expect(await probe('/readyz')).toBe(200);
  });
});
