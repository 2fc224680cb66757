import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  HEALTH_LIMITS,
  type HealthServer,
  startHealthServer,
} from '../../consumers/health-server.js';
import { testLogger } from '../support/stack.js';
import { getRequest, rawRequest, stalledReader } from '../support-api/raw-http.js';

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

  it('holds a modest number of connections', async () => {
    // Connected in order: the server accepts them before the third.
    const held = await Promise.all(
      [0, 1].map(() => stalledReader(health.port, 'GET /healthz HTTP/1.1\r\n')),
    );
    const dropped = await rawRequest(health.port, getRequest('/healthz'), { waitMs: 1_000 });
    expect(dropped.closed).toBe(true);
    expect(dropped.text).toBe('');
    for (const socket of held) socket.destroy();
    // Freed once the server has seen them close.
    await expect
      .poll(async () => (await rawRequest(health.port, getRequest('/healthz'))).status)
      .toBe(200);
  });
});
