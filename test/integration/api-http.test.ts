import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { markEpochComplete, writeEpoch } from '../../src/read-model/epoch.js';
import { createKeys } from '../../src/read-model/keys.js';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { testApi } from '../support-api/api-harness.js';

// The HTTP surface around the three operations: store failures, browsers, routing, logs, ops.
describe('API over HTTP', () => {
  const api = testApi();
  const base = api.config.api.basePath;
  const key = newApiKey();

  beforeAll(async () => {
    await api.ready();
    await api.seed.installation(installation(1));
    await api.seed.liveKey(key, { app: 1, installations: [installation(1)] });
  });
  afterAll(() => api.close());

  it('answers 500 promptly when Redis is unreachable, never 401 or 404', async () => {
    const down = testApi({ redisUrl: 'redis://127.0.0.1:1' });
    try {
      const headers = { 'api-key': key };
      const cases: Array<[string, string]> = [
        ['/getInstallations', 'DATABASE_ERROR'],
        ['/getInstallationDevices?installationId=1', 'INTERNAL_ERROR'],
        ['/getInstallationCurrentEnergyFlow?installationId=1', 'INTERNAL_ERROR'],
        ['/getInstallationDevices?installationId=x', 'INTERNAL_ERROR'],
      ];
      for (const [url, error] of cases) {
        const started = Date.now();
        const res = await down.app.inject({ url: `${base}${url}`, headers });
        expect(Date.now() - started, url).toBeLessThan(1_500);
        expect(res.statusCode, url).toBe(500);
        expect(res.json()).toEqual({ valid: false, error });
        expect(res.headers['retry-after'], url).toBe('1');
      }
      expect((await down.app.inject({ url: '/readyz' })).statusCode).toBe(503);
      expect((await down.app.inject({ url: '/healthz' })).statusCode).toBe(200);
      // What the RedisUnreachable alert reads.
      expect((await down.app.inject({ url: '/metrics' })).body).toMatch(
        /^redis_client_connected 0$/m,
      );
      expect(down.logLines.join('')).not.toContain(key);
    } finally {
      await down.close();
    }
  });

  it('sends no CORS header and refuses preflights', async () => {
    const origin = 'https://evil.example';
    const res = await api.app.inject({
      url: `${base}/getInstallations`,
      headers: { 'api-key': key, origin },
    });
    expect(res.statusCode).toBe(200);
    const preflight = await api.app.inject({
      method: 'OPTIONS',
      url: `${base}/getInstallations`,
      headers: {
        origin,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'api-key',
      },
    });
    expect(preflight.statusCode).toBe(405);
    expect(preflight.json()).toEqual({ valid: false, error: 'METHOD_NOT_ALLOWED' });
    for (const r of [res, preflight]) {
      expect(Object.keys(r.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    }
  });

  it('answers unknown routes 404 NOT_FOUND and other methods 405 METHOD_NOT_ALLOWED', async () => {
    const unknown = await api.app.inject({
      url: `${base}/getEverything`,
      headers: { 'api-key': key },
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ valid: false, error: 'NOT_FOUND' });
    // HEAD is allowed wherever GET is (api-edge.test.ts checks its answers).
    for (const method of ['PUT', 'DELETE', 'PATCH'] as const) {
      const res = await api.app.inject({ method, url: `${base}/getInstallations?x=1` });
      expect(res.statusCode, method).toBe(405);
      expect(res.headers.allow).toBe('GET, HEAD, POST');
    }
  });

  it('answers an unparsable HTTP request in the same JSON envelope', async () => {
    const origin = new URL(await api.app.listen({ host: '127.0.0.1', port: 0 }));
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(origin.port), origin.hostname);
      let data = '';
      socket.on('data', (chunk) => {
        data += chunk;
      });
      socket.on('error', reject);
      socket.on('close', () => resolve(data));
      socket.write('NOT HTTP AT ALL\r\n\r\n');
    });
    expect(raw).toMatch(/^HTTP\/1\.1 400 /);
    expect(raw.endsWith('{"valid":false,"error":"BAD_REQUEST"}')).toBe(true);
  });

  it('never logs the key, whichever header carried it', async () => {
    const before = api.logLines.length;
    await api.app.inject({ url: `${base}/getInstallations`, headers: { 'api-key': key } });
    await api.app.inject({
      url: `${base}/getInstallationDevices?installationId=1`,
      headers: { authorization: `Bearer ${key}` },
    });
    await api.app.inject({ url: `${base}/nope`, headers: { authorization: `Bearer ${key}` } });
    // An integrator may send the key in the query string: only the path is logged.
    await api.app.inject({ url: `${base}/getInstallations?apiKey=${key}` });
    await api.app.inject({ url: `${base}/getInstallationDevices?installationId=1&api_key=${key}` });
    await api.app.inject({ url: `${base}/nope?key=${key}` });
    const lines = api.logLines.slice(before).join('');
    expect(lines).toContain('incoming request');
    expect(lines).toContain(`"url":"${base}/getInstallationDevices"`);
    expect(lines).not.toContain('installationId=1');
    expect(lines).not.toContain(key);
    expect(lines).not.toContain(key.slice(4));
  });

  it('serves health, readiness, metrics and the OpenAPI document', async () => {
    expect((await api.app.inject({ url: '/healthz' })).json()).toEqual({ status: 'ok' });
    // No epoch marker: the read model was never built, or the store lost it.
    expect((await api.app.inject({ url: '/readyz' })).statusCode).toBe(503);
    const epoch = await writeEpoch(api.redis, createKeys(api.prefix), Date.now());
    expect((await api.app.inject({ url: '/readyz' })).statusCode).toBe(503);
    await markEpochComplete(api.redis, createKeys(api.prefix), epoch);
    expect((await api.app.inject({ url: '/readyz' })).statusCode).toBe(200);
    await api.app.inject({ url: `${base}/getInstallations`, headers: { 'api-key': key } });
    const metrics = await api.app.inject({ url: '/metrics' });
    expect(metrics.body).toMatch(
      /api_requests_total\{route="\/application\/v1\/getInstallations",method="GET",status="200"\} \d+/,
    );
    expect(metrics.body).toContain('api_request_duration_seconds_bucket');
    // The process's CPU (the CPU-per-request rule) and its Redis connection.
    expect(metrics.body).toMatch(/^process_cpu_seconds_total [\d.e-]+$/m);
    expect(metrics.body).toMatch(/^redis_client_connected 1$/m);
    const doc = await api.app.inject({ url: `${base}/openapi.json` });
    expect(doc.json()).toMatchObject({ openapi: '3.1.0', info: { version: '1.0.0' } });
  });
});
