import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHealthServer } from '../../consumers/health-server.js';
import { loadConfig } from '../../src/config.js';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { testLogger } from '../support/stack.js';
import { testApi } from '../support-api/api-harness.js';
import { getRequest, type RawAnswer, rawRequest, stalledReader } from '../support-api/raw-http.js';

// The HTTP edge as an attacker meets it (issue 11): every form of the eight findings, over a
// real socket. Each answer is the JSON envelope with the API's headers.

const envelope = (answer: RawAnswer, status: number, error: string) => {
  expect(answer.status, answer.text.slice(0, 200)).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(answer.headers['x-content-type-options']).toBe('nosniff');
  expect(JSON.parse(answer.body)).toEqual({ valid: false, error });
};

describe('HTTP edge', () => {
  const api = testApi();
  const base = api.config.api.basePath;
  const key = newApiKey();
  let port: number;
  let canary: Server;
  let canaryPort: number;
  let canaryHits = 0;

  beforeAll(async () => {
    await api.ready();
    await api.seed.installation(installation(3));
    await api.seed.liveKey(key, { app: 1, installations: [installation(3)] });
    port = Number(new URL(await api.app.listen({ host: '127.0.0.1', port: 0 })).port);
    // Must never be reached: any connection to it is a request the proxy was steered to make.
    canary = createServer((socket) => {
      canaryHits++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => canary.listen(0, '127.0.0.1', resolve));
    canaryPort = (canary.address() as { port: number }).port;
  });
  afterAll(async () => {
    canary.close();
    await api.close();
  });

  it('never lets a request-target steer the playground proxy to another host (SSRF)', async () => {
    const foreign = `127.0.0.1:${canaryPort}`;
    const proxy = `/docs/proxy${base}`;
    const cases: Array<[string, number, string]> = [
      // The reported exploit: the userinfo puts `https:` where the proxy sliced the URL.
      [getRequest(`http://xxxxhttps:@${foreign}${proxy}/../../..`), 400, 'BAD_REQUEST'],
      [getRequest(`http://${foreign}${proxy}/getInstallations`), 400, 'BAD_REQUEST'],
      [getRequest(`https://${foreign}${proxy}/getInstallations`), 400, 'BAD_REQUEST'],
      [getRequest(`http://user@localhost${proxy}/getInstallations`), 400, 'BAD_REQUEST'],
      [getRequest(`*`, [], 'OPTIONS'), 400, 'BAD_REQUEST'],
      [getRequest(`//${foreign}${proxy}/getInstallations`), 404, 'NOT_FOUND'],
      // Absolute-form naming the Host it is sent with: served, from the configured upstream.
      [
        [
          `GET http://${foreign}${proxy}/getInstallations HTTP/1.1`,
          `Host: ${foreign}`,
          'Connection: close',
          '',
          '',
        ].join('\r\n'),
        401,
        'UNAUTHORIZED',
      ],
    ];
    for (const [request, status, error] of cases) {
      envelope(await rawRequest(port, request), status, error);
    }
    const post = await rawRequest(
      port,
      [
        `POST http://xxxxhttps:@${foreign}${proxy}/../../.. HTTP/1.1`,
        'Host: localhost',
        'Content-Type: application/json',
        'Content-Length: 2',
        'Connection: close',
        '',
        '{}',
      ].join('\r\n'),
    );
    envelope(post, 400, 'BAD_REQUEST');
    expect(canaryHits).toBe(0);
  });

  it('forwards nothing outside the API base, however the path is spelled', async () => {
    const proxy = `/docs/proxy${base}`;
    for (const path of [
      '/../../healthz',
      '/%2e%2e/%2e%2e/readyz',
      '/%2E%2E/%2E%2E/metrics',
      '/.%2e/.%2e/healthz',
      '/..\\..\\healthz',
      '/getInstallations/../../../readyz',
    ]) {
      const answer = await rawRequest(port, getRequest(`${proxy}${path}`, [`Api-Key: ${key}`]));
      envelope(answer, 404, 'NOT_FOUND');
    }
    // Still relayed: a path inside the base.
    const ok = await rawRequest(port, getRequest(`${proxy}/getInstallations`, [`Api-Key: ${key}`]));
    expect(ok.status).toBe(200);
  });

  it('answers an invalid URL in the envelope, never echoing it, and logs and counts it', async () => {
    const before = api.logLines.length;
    for (const target of [
      `${base}/getInstallations%E9?apiKey=${key}`,
      `${base}/getInstallations%zz?apiKey=${key}`,
      `${base}/%C0%AE%C0%AE/getInstallations?apiKey=${key}`,
    ]) {
      const answer = await rawRequest(port, getRequest(target));
      envelope(answer, 400, 'BAD_REQUEST');
      expect(answer.text).not.toContain(key);
      expect(answer.text).not.toContain('apiKey');
    }
    const lines = api.logLines.slice(before).join('');
    expect(lines).toContain('"reason":"FST_ERR_BAD_URL"');
    expect(lines).not.toContain(key);
    const metrics = await api.app.inject({ url: '/metrics' });
    expect(metrics.body).toMatch(/api_refused_requests_total\{error="BAD_REQUEST"\} [1-9]/);
  });

  it('answers what Node would answer bare (no Host, bad Expect, huge headers) in the envelope', async () => {
    envelope(await rawRequest(port, 'GET /healthz HTTP/1.1\r\n\r\n'), 400, 'BAD_REQUEST');
    envelope(
      await rawRequest(port, getRequest('/healthz', ['Expect: 999-bogus'])),
      417,
      'EXPECTATION_FAILED',
    );
    const big = 'a'.repeat(api.config.api.maxHeaderBytes);
    envelope(
      await rawRequest(port, getRequest('/healthz', [`X-Big: ${big}`])),
      431,
      'HEADERS_TOO_LARGE',
    );
    envelope(await rawRequest(port, 'NOT HTTP AT ALL\r\n\r\n'), 400, 'BAD_REQUEST');
    // HTTP/1.0 needs no Host; 100-continue is still honoured.
    expect((await rawRequest(port, 'GET /healthz HTTP/1.0\r\n\r\n')).status).toBe(200);
    const cont = await rawRequest(port, getRequest('/healthz', ['Expect: 100-continue']));
    expect(cont.text).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /);
    const metrics = (await api.app.inject({ url: '/metrics' })).body;
    for (const error of ['EXPECTATION_FAILED', 'HEADERS_TOO_LARGE']) {
      expect(metrics).toMatch(new RegExp(`api_refused_requests_total\\{error="${error}"\\} [1-9]`));
    }
  });

  it('answers another method on a known route 405, also with a fragment in the target', async () => {
    for (const target of [`${base}/getInstallations#frag`, `${base}/getInstallations?x=1#frag`]) {
      const answer = await rawRequest(
        port,
        `PROPFIND ${target} HTTP/1.1\r\nHost: localhost\r\n\r\n`,
        {
          untilAnswer: true,
        },
      );
      envelope(answer, 405, 'METHOD_NOT_ALLOWED');
      expect(answer.headers.allow).toBe('GET, HEAD, POST');
    }
  });

  it('answers a HEAD refused before parsing (bad target, huge headers) with the head alone', async () => {
    const big = 'a'.repeat(api.config.api.maxHeaderBytes);
    for (const [request, status] of [
      ['HEAD /\x7f HTTP/1.1\r\nHost: localhost\r\n\r\n', 400],
      [`HEAD /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: ${big}\r\n\r\n`, 431],
      [`HEAD /${'p'.repeat(17_000)} HTTP/1.1\r\nHost: localhost\r\n\r\n`, 431],
    ] as const) {
      const answer = await rawRequest(port, request);
      expect(answer.status, request.slice(0, 20)).toBe(status);
      expect(Number(answer.headers['content-length'])).toBeGreaterThan(0);
      // Everything written ends with the blank line after the head: no body bytes follow.
      expect(answer.text.endsWith('\r\n\r\n'), request.slice(0, 20)).toBe(true);
    }
    // A GET refused the same way still gets its envelope.
    envelope(
      await rawRequest(port, 'GET /\x7f HTTP/1.1\r\nHost: localhost\r\n\r\n'),
      400,
      'BAD_REQUEST',
    );
  });

  it('answers 401 to a repeated Authorization or Api-Key, even when each is the live key', async () => {
    const target = `${base}/getInstallations`;
    const once = await rawRequest(port, getRequest(target, [`Authorization: Bearer ${key}`]));
    expect(once.status).toBe(200);
    for (const headers of [
      [`Authorization: Bearer ${key}`, `Authorization: Bearer ${newApiKey()}`],
      [`Authorization: Bearer ${key}`, `Authorization: Bearer ${key}`],
      [`Api-Key: ${key}`, `Api-Key: ${key}`],
      [`Api-Key: ${key}`, `aPi-kEy: ${newApiKey()}`],
    ]) {
      envelope(await rawRequest(port, getRequest(target, headers)), 401, 'UNAUTHORIZED');
    }
  });

  it('bars shared caches and sniffing on API answers, success and error alike', async () => {
    const headers = { 'api-key': key };
    const answers = [
      await api.app.inject({ url: `${base}/getInstallations`, headers }),
      await api.app.inject({ url: `${base}/getInstallationDevices?installationId=3`, headers }),
      await api.app.inject({
        url: `${base}/getInstallationCurrentEnergyFlow?installationId=3`,
        headers,
      }),
      await api.app.inject({ url: `${base}/getInstallations` }),
      await api.app.inject({ url: `${base}/nope` }),
      await api.app.inject({ url: `/docs/proxy${base}/getInstallations`, headers }),
    ];
    for (const res of answers) {
      expect(res.headers['cache-control'], res.body).toBe('private, no-cache');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    }
  });

  it('answers HEAD wherever GET answers, with the same headers and no body', async () => {
    const headers = { 'api-key': key };
    for (const url of [
      `${base}/getInstallations`,
      `${base}/getInstallationDevices?installationId=3`,
      `${base}/getInstallationDevices?installationId=x`,
      `${base}/openapi.json`,
      '/healthz',
      '/docs/',
    ]) {
      const get = await api.app.inject({ url, headers });
      const head = await api.app.inject({ method: 'HEAD', url, headers });
      expect(head.statusCode, url).toBe(get.statusCode);
      expect(head.body).toBe('');
      for (const name of [
        'content-type',
        'content-length',
        'cache-control',
        'content-security-policy',
      ]) {
        expect(head.headers[name], `${url} ${name}`).toBe(get.headers[name]);
      }
    }
    // Over the wire too: the answer ends after the headers.
    const raw = await rawRequest(
      port,
      getRequest(`${base}/getInstallations`, [`Api-Key: ${key}`], 'HEAD'),
    );
    expect(raw.status).toBe(200);
    expect(raw.text.endsWith('\r\n\r\n')).toBe(true);
    const other = await api.app.inject({ method: 'PUT', url: `${base}/getInstallations` });
    expect(other.headers.allow).toBe('GET, HEAD, POST');
  });

  it('serves the playground with a strict CSP: its own script by hash, no framing, no other origin', async () => {
    const page = await api.app.inject({ url: '/docs/' });
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toMatch(/https?:|\*|'unsafe-eval'/);
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    const inline = [...page.body.matchAll(/<script(?![^>]*src=)[^>]*>([\s\S]*?)<\/script>/g)];
    expect(inline.length).toBeGreaterThan(0);
    for (const [, script] of inline) {
      const hash = createHash('sha256')
        .update(script as string)
        .digest('base64');
      expect(csp).toContain(`'sha256-${hash}'`);
    }
    expect(csp).not.toMatch(/script-src[^;]*'unsafe-inline'/);
    const js = await api.app.inject({ url: '/docs/js/scalar.js' });
    expect(js.headers['content-security-policy']).toContain("frame-ancestors 'none'");
  });
  it('applies the repeated-credential rule through the playground proxy too', async () => {
    const proxy = `/docs/proxy${base}/getInstallations`;
    const direct = `${base}/getInstallations`;
    expect((await rawRequest(port, getRequest(proxy, [`Api-Key: ${key}`]))).status).toBe(200);
    for (const headers of [
      [`Authorization: Bearer ${key}`, `Authorization: Bearer ${key}`],
      [`authorization: Bearer ${key}`, `Authorization: Bearer ${key}`],
      ['Authorization: Basic dXNlcjpwYXNz', 'Authorization: Basic dXNlcjpwYXNz', `Api-Key: ${key}`],
      [`Api-Key: ${key}`, `api-key: ${key}`],
    ]) {
      envelope(await rawRequest(port, getRequest(proxy, headers)), 401, 'UNAUTHORIZED');
      envelope(await rawRequest(port, getRequest(direct, headers)), 401, 'UNAUTHORIZED');
    }
  });

  it('answers an invalid or repeated Host with 400 before routing, on every path', async () => {
    const before = api.logLines.length;
    for (const path of ['/docs', '/docs/', '/healthz', `${base}/getInstallations`, '/nope']) {
      for (const host of ['[', 'a b', '%', '[::1', ' ', '\\', '999.1.1.1', 'a:b:c', 'x@y']) {
        const answer = await rawRequest(
          port,
          `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
        );
        envelope(answer, 400, 'BAD_REQUEST');
      }
      const two = await rawRequest(port, getRequest(path, ['Host: other']));
      envelope(two, 400, 'BAD_REQUEST');
    }
    // Valid forms still pass: a name, an address, an IPv6 literal, each with a port.
    for (const host of ['localhost', '127.0.0.1:8080', '[::1]:80', 'api.example.com']) {
      const answer = await rawRequest(
        port,
        `GET /healthz HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
      );
      expect(answer.status, host).toBe(200);
    }
    const lines = api.logLines.slice(before);
    expect(lines.join('')).toContain('"reason":"invalid Host"');
    expect(lines.join('')).toContain('"reason":"repeated Host"');
    // Refused at the edge: nothing reached a handler that could fail.
    expect(lines.filter((l) => /"level":(50|60)/.test(l))).toEqual([]);
  });

  it('refuses what is not HTTP/1.0 or 1.1, and needs Host on 1.1', async () => {
    for (const request of [
      'GET /healthz HTTP/2.0\r\n\r\n',
      'GET /healthz HTTP/2.0\r\nHost: x\r\n\r\n',
      'GET /healthz\r\n\r\n',
      `GET ${base}/getInstallations HTTP/0.9\r\n\r\n`,
      'GET /healthz HTTP/1.1\r\n\r\n',
    ]) {
      envelope(await rawRequest(port, request), 400, 'BAD_REQUEST');
    }
  });

  it('answers CONNECT in the envelope (405), logged and counted', async () => {
    const before = api.logLines.length;
    for (const target of [`127.0.0.1:${canaryPort}`, '/docs/proxy', '*']) {
      const answer = await rawRequest(port, `CONNECT ${target} HTTP/1.1\r\nHost: x\r\n\r\n`);
      envelope(answer, 405, 'METHOD_NOT_ALLOWED');
      expect(answer.closed).toBe(true);
    }
    expect(api.logLines.slice(before).join('')).toContain('"reason":"CONNECT"');
    const metrics = (await api.app.inject({ url: '/metrics' })).body;
    expect(metrics).toMatch(/api_refused_requests_total\{error="METHOD_NOT_ALLOWED"\} [1-9]/);
    expect(canaryHits).toBe(0);
  });

  it('never logs the path of a request no route matched (a key may be in it)', async () => {
    const before = api.logLines.length;
    for (const target of [
      `${base}/getInstallations;apiKey=${key}`,
      `/${key}`,
      `${base}/x/${key}?apiKey=${key}`,
    ]) {
      const answer = await rawRequest(port, getRequest(target));
      envelope(answer, 404, 'NOT_FOUND');
      expect(answer.text).not.toContain(key);
    }
    const lines = api.logLines.slice(before).join('');
    expect(lines).toContain('"url":"unmatched"');
    expect(lines).not.toContain(key);
    expect(lines).not.toContain('apiKey');
  });
});

describe('playground proxy and encoded separators', () => {
  // The proxy's upstream is a canary: any connection to it is a forwarded request.
  let canary: Server;
  let hits: string[] = [];
  let heads: string[] = [];
  // Another origin, named by the refused targets: any connection to it is a steered request.
  let foreign: Server;
  let foreignHits = 0;
  const foreignReady = new Promise<number>((resolve) => {
    foreign = createServer((socket) => {
      foreignHits++;
      socket.destroy();
    });
    foreign.listen(0, '127.0.0.1', () => resolve((foreign.address() as { port: number }).port));
  });
  const canaryReady = new Promise<number>((resolve) => {
    canary = createServer((socket) => {
      socket.once('data', (chunk) => {
        heads.push(String(chunk).split('\r\n\r\n', 1)[0] as string);
        hits.push(String(chunk).split('\r\n', 1)[0] as string);
        socket.end(
          'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}',
        );
      });
    });
    canary.listen(0, '127.0.0.1', () => resolve((canary.address() as { port: number }).port));
  });
  let api: ReturnType<typeof testApi>;
  let port: number;

  beforeAll(async () => {
    const canaryPort = await canaryReady;
    api = testApi({ env: { API_DOCS_UPSTREAM_URL: `http://127.0.0.1:${canaryPort}` } });
    await api.ready();
    port = Number(new URL(await api.app.listen({ host: '127.0.0.1', port: 0 })).port);
  });
  afterAll(async () => {
    canary.close();
    foreign.close();
    await api.close();
  });

  it('refuses encoded dots, slashes, backslashes and percent signs before any connection', async () => {
    const proxy = `/docs/proxy${api.config.api.basePath}`;
    for (const rest of [
      '/..%2f..%2fhealthz',
      '/..%2F..%2Fhealthz',
      '/%2e%2e%2f%2e%2e%2fmetrics',
      '/..%5c..%5creadyz',
      '/%252e%252e/healthz',
      '/getInstallations%2f..',
      '/%2E',
    ]) {
      envelope(await rawRequest(port, getRequest(`${proxy}${rest}`)), 404, 'NOT_FOUND');
    }
    expect(hits).toEqual([]);
    // The canary is reachable: a path inside the base is forwarded to it, as it came.
    const ok = await rawRequest(port, getRequest(`${proxy}/getInstallations`));
    expect(ok.status).toBe(200);
    expect(hits).toEqual([`GET ${api.config.api.basePath}/getInstallations HTTP/1.1`]);
    hits = [];
  });

  it("takes Scalar's scalar_url form under the same rules: other origins, outside the base and encoded separators never connect", async () => {
    const base = api.config.api.basePath;
    const upstream = new URL(api.config.api.docsUpstreamUrl as string).origin;
    const foreignOrigin = `http://127.0.0.1:${await foreignReady}`;
    heads = [];
    const viaScalar = (url: string) => `/docs/proxy?${new URLSearchParams([['scalar_url', url]])}`;
    const refused: Array<[string, number, string]> = [
      [viaScalar(`${foreignOrigin}${base}/getInstallations`), 404, 'NOT_FOUND'],
      [
        viaScalar(`http://localhost:${new URL(upstream).port}${base}/getInstallations`),
        404,
        'NOT_FOUND',
      ],
      [viaScalar(`http://x@${foreignOrigin.slice(7)}${base}/getInstallations`), 404, 'NOT_FOUND'],
      [
        viaScalar(`${upstream}@${foreignOrigin.slice(7)}${base}/getInstallations`),
        404,
        'NOT_FOUND',
      ],
      [viaScalar(`${upstream}/healthz`), 404, 'NOT_FOUND'],
      [viaScalar(`${upstream}${base}/../../metrics`), 404, 'NOT_FOUND'],
      [viaScalar(`${upstream}${base}/..\\..\\readyz`), 404, 'NOT_FOUND'],
      [viaScalar(`${upstream}${base}/..%2f..%2fhealthz`), 404, 'NOT_FOUND'],
      [viaScalar(`${upstream}${base}/%252e%252e/healthz`), 404, 'NOT_FOUND'],
      [viaScalar(`${upstream}${base}/..%5Creadyz`), 404, 'NOT_FOUND'],
      [
        `/docs/proxy?scalar_url=${encodeURIComponent(`${upstream}${base}/x`)}&scalar_url=${encodeURIComponent(`${foreignOrigin}${base}/x`)}`,
        400,
        'BAD_REQUEST',
      ],
      ['/docs/proxy', 400, 'BAD_REQUEST'],
    ];
    for (const [target, status, error] of refused) {
      envelope(await rawRequest(port, getRequest(target)), status, error);
    }
    // The repeated-credential rule holds here too, before any connection.
    const twice = getRequest(viaScalar(`${upstream}${base}/getInstallations`), [
      'Api-Key: a',
      'api-key: b',
    ]);
    envelope(await rawRequest(port, twice), 401, 'UNAUTHORIZED');
    expect(hits).toEqual([]);
    expect(foreignHits).toBe(0);
    // Inside the base: forwarded to the upstream with the query and the three headers only.
    const ok = await rawRequest(
      port,
      getRequest(viaScalar(`${upstream}${base}/getInstallationDevices?installationId=5`), [
        'Api-Key: k',
        'Cookie: c=1',
        'X-Forwarded-For: 203.0.113.9',
        'Accept: text/event-stream',
      ]),
    );
    expect(ok.status).toBe(200);
    expect(hits).toEqual([`GET ${base}/getInstallationDevices?installationId=5 HTTP/1.1`]);
    const forwarded = (heads[0] as string)
      .split('\r\n')
      .slice(1)
      .map((line) => line.slice(0, line.indexOf(':')).toLowerCase())
      .sort();
    expect(forwarded).toEqual(['api-key', 'connection', 'host']);
    hits = [];
    heads = [];
  });
});

describe('HTTP edge: requests per connection', () => {
  const api = testApi({ env: { API_MAX_REQUESTS_PER_SOCKET: '2' } });
  let port: number;
  beforeAll(async () => {
    await api.ready();
    port = Number(new URL(await api.app.listen({ host: '127.0.0.1', port: 0 })).port);
  });
  afterAll(() => api.close());

  it('closes after the last allowed request, never answering Node’s bare 503', async () => {
    const one = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';
    const answer = await rawRequest(port, one.repeat(4), { waitMs: 3_000 });
    expect(answer.closed).toBe(true);
    const statuses = [...answer.text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
    expect(statuses).toEqual(['200', '200']);
    expect(answer.text).toMatch(/connection: close/i);
    expect(answer.text).not.toContain('503');
  });
});

describe('HTTP edge limits', () => {
  // Short limits so the test takes seconds; docs/api.md states the defaults and the bound.
  const api = testApi({
    env: {
      API_HEADERS_TIMEOUT_MS: '600',
      API_REQUEST_TIMEOUT_MS: '1200',
      API_KEEP_ALIVE_TIMEOUT_MS: '600',
      API_MAX_CONNECTIONS: '3',
      API_SOCKET_IDLE_TIMEOUT_MS: '1500',
    },
  });
  const base = api.config.api.basePath;
  const key = newApiKey();
  // Node checks timeouts on an interval of 500 ms; the rest is scheduling slack.
  const BOUND_MS = 500 + 1_000;
  let port: number;

  beforeAll(async () => {
    await api.ready();
    await api.seed.liveKey(key, { app: 1, installations: [] });
    port = Number(new URL(await api.app.listen({ host: '127.0.0.1', port: 0 })).port);
  });
  afterAll(() => api.close());

  it('cuts a client trickling its headers at the headers timeout', async () => {
    const trickle = ['GET /healthz HTTP/1.1\r\nHost: x\r\n', ...Array(40).fill('X-Slow: 1\r\n')];
    const answer = await rawRequest(port, trickle, { gapMs: 100, waitMs: 5_000 });
    envelope(answer, 408, 'REQUEST_TIMEOUT');
    expect(answer.closed).toBe(true);
    expect(answer.elapsedMs).toBeGreaterThanOrEqual(600);
    expect(answer.elapsedMs).toBeLessThan(600 + BOUND_MS);
  });

  it('cuts a client trickling its body at the request timeout', async () => {
    const head = [
      `POST ${base}/getInstallations HTTP/1.1`,
      'Host: x',
      `Api-Key: ${key}`,
      'Content-Type: application/x-www-form-urlencoded',
      'Content-Length: 100',
      '',
      '',
    ].join('\r\n');
    const answer = await rawRequest(port, [head, ...Array(60).fill('a')], {
      gapMs: 100,
      waitMs: 8_000,
    });
    envelope(answer, 408, 'REQUEST_TIMEOUT');
    expect(answer.closed).toBe(true);
    expect(answer.elapsedMs).toBeLessThan(1_200 + BOUND_MS);
  });

  it('closes an idle keep-alive connection at the keep-alive timeout', async () => {
    const answer = await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n', {
      waitMs: 5_000,
    });
    expect(answer.status).toBe(200);
    expect(answer.closed).toBe(true);
    expect(answer.elapsedMs).toBeLessThan(600 + BOUND_MS);
  });

  it('holds at most API_MAX_CONNECTIONS connections, trading a client’s idle one for its new one', async () => {
    // Three idle connections fill the cap (each sent half a request line).
    const held = [0, 1, 2].map(() =>
      rawRequest(port, 'GET /healthz HTTP/1.1\r\n', { waitMs: 3_000 }),
    );
    await expect.poll(() => countConnections(api.app.server)).toBe(3);
    const fresh = await rawRequest(port, getRequest('/healthz'));
    expect(fresh.status).toBe(200);
    // The oldest idle one was closed for it, unanswered.
    const first = await held[0];
    expect(first?.closed).toBe(true);
    expect(first?.text).toBe('');
    await Promise.all(held);
    const metrics = await api.app.inject({ url: '/metrics' });
    expect(metrics.body).toMatch(/api_dropped_connections_total\{reason="reclaimed"\} [1-9]/);
  });
  it('never answers twice: an early answer to a body still arriving, then the request timeout', async () => {
    const head = [
      `POST ${base}/getInstallations HTTP/1.1`,
      'Host: x',
      'Content-Type: application/x-www-form-urlencoded',
      'Content-Length: 100',
      '',
      'installationId=1',
    ].join('\r\n');
    // No key: 401 at once, while 84 bytes of the body are still owed; then silence.
    const answer = await rawRequest(port, head, { waitMs: 1_200 + BOUND_MS + 1_000 });
    expect(answer.status).toBe(401);
    expect(answer.closed).toBe(true);
    expect(answer.text.match(/HTTP\/1\.1 /g)).toHaveLength(1);
  });

  it('cuts a client that stops reading at the socket idle timeout, freeing the cap', async () => {
    // The attack as reported: many pipelined requests for a large document, never read.
    const request = `GET ${base}/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(200);
    const started = Date.now();
    const stalled = await Promise.all([0, 1, 2].map(() => stalledReader(port, request)));
    try {
      await expect.poll(() => countConnections(api.app.server)).toBe(3);
      // They hold the cap; a client on another address still gets in, one of theirs closed
      // for it (the biggest holder gives way)...
      const other = { localAddress: '127.0.0.2', untilAnswer: true };
      expect((await rawRequest(port, getRequest('/healthz'), other)).status).toBe(200);
      // ...and the idle timeout cuts the rest.
      await expect
        .poll(() => countConnections(api.app.server), { timeout: 1_500 + BOUND_MS + 1_000 })
        .toBe(0);
      // Not earlier than the idle timeout. No upper bound on the clock: `started` precedes the
      // connects and the writes that fill the buffers, which a busy machine stretches (CI once
      // took 4.2 s); the poll's own timeout bounds the cut, and the metric below names its cause.
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_500);
    } finally {
      for (const socket of stalled) socket.destroy();
    }
    expect((await rawRequest(port, getRequest('/healthz'))).status).toBe(200);
    const metrics = (await api.app.inject({ url: '/metrics' })).body;
    expect(metrics).toMatch(/api_dropped_connections_total\{reason="stalled"\} 2/);
    expect(metrics).toMatch(/api_dropped_connections_total\{reason="reclaimed"\} [1-9]/);
  });
});

function countConnections(server: import('node:net').Server): Promise<number> {
  return new Promise((resolve, reject) =>
    server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );
}

describe('listeners', () => {
  it('bind loopback unless configured otherwise', async () => {
    const config = loadConfig({});
    expect(config.api.host).toBe('127.0.0.1');
    expect(config.consumer.healthHost).toBe('127.0.0.1');
    expect(loadConfig({ CONSUMER_HEALTH_HOST: '0.0.0.0' }).consumer.healthHost).toBe('0.0.0.0');
    const { Registry } = await import('prom-client');
    const health = await startHealthServer({
      port: 0,
      host: config.consumer.healthHost,
      registry: new Registry(),
      isReady: async () => true,
      logger: testLogger,
    });
    try {
      const res = await fetch(`http://127.0.0.1:${health.port}/healthz`);
      expect(res.status).toBe(200);
    } finally {
      await health.close();
    }
    // And without a host at all: the default is loopback too.
    const bare = await startHealthServer({
      port: 0,
      registry: new Registry(),
      isReady: async () => true,
      logger: testLogger,
    });
    try {
      const { networkInterfaces } = await import('node:os');
      const external = Object.values(networkInterfaces())
        .flat()
        .find((i) => i && i.family === 'IPv4' && !i.internal);
      if (external) {
        await expect(fetch(`http://${external.address}:${bare.port}/healthz`)).rejects.toThrow();
      }
      expect((await fetch(`http://127.0.0.1:${bare.port}/healthz`)).status).toBe(200);
    } finally {
      await bare.close();
    }
  });
});
