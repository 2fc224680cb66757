import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { testApi } from '../support-api/api-harness.js';

// The documentation playground: served offline, its proxy relays to the API and reports an
// unusable upstream as 502/504.
describe('docs playground and proxy', () => {
  const api = testApi();
  const base = api.config.api.basePath;
  const key = newApiKey();
  let origin: string;
  let fake: Server;
  let fakeUrl: string;
  const proxied = (path: string) => `/docs/proxy${base}${path}`;

  beforeAll(async () => {
    await api.ready();
    await api.seed.installation(installation(5));
    await api.seed.liveKey(key, { app: 1, installations: [installation(5)] });
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    // A misbehaving upstream, one behaviour per path.
    fake = createServer((req, res) => {
      if (req.url?.includes('redirect')) {
        res.writeHead(302, { location: 'https://example.com/' }).end();
      } else if (req.url?.includes('html')) {
        res.writeHead(200, { 'content-type': 'text/html' }).end('<html></html>');
      } else if (req.url?.includes('badjson')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"valid":');
      } else if (req.url?.includes('slow')) {
        setTimeout(
          () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'),
          3_000,
        );
      } else {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
      }
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    fakeUrl = `http://127.0.0.1:${(fake.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    fake.closeAllConnections();
    fake.close();
    await api.close();
  });

  it('serves the page and its JavaScript from this server, no CDN', async () => {
    const page = await fetch(`${origin}/docs/`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('js/scalar.js');
    expect(html).not.toMatch(/cdn\.jsdelivr|unpkg\.com|cdn\.scalar/);
    const js = await fetch(`${origin}/docs/js/scalar.js`);
    expect(js.status).toBe(200);
    const spec = (await (await fetch(`${origin}/docs/openapi.json`)).json()) as {
      servers: unknown;
    };
    // The API's own base, relative: Scalar resolves it against the page's origin, so its snippets
    // name the address the user reached this server at, and try-it calls it there directly.
    expect(spec.servers).toEqual([{ url: base, description: expect.any(String) }]);
    expect(html).not.toContain('proxyUrl');
  });

  it('with API_DOCS_UPSTREAM_URL: names that origin and sends try-it through the proxy', async () => {
    const front = testApi({ env: { API_DOCS_UPSTREAM_URL: `${origin}/ignored/path` } });
    try {
      const spec = (await front.app.inject({ url: '/docs/openapi.json' })).json() as {
        servers: unknown;
      };
      expect(spec.servers).toEqual([{ url: `${origin}${base}`, description: expect.any(String) }]);
      const html = (await front.app.inject({ url: '/docs/' })).body;
      expect(html).toContain('"proxyUrl": "/docs/proxy"');
      // Scalar's form of a try-it, answered from the upstream.
      const scalarForm = (path: string) =>
        `/docs/proxy?${new URLSearchParams([['scalar_url', `${origin}${base}${path}`]])}`;
      const list = await front.app.inject({
        url: scalarForm('/getInstallations'),
        headers: { 'api-key': key },
      });
      expect(list.statusCode).toBe(200);
      expect(list.body).toBe(
        await (
          await fetch(`${origin}${base}/getInstallations`, { headers: { 'api-key': key } })
        ).text(),
      );
      const post = await front.app.inject({
        method: 'POST',
        url: scalarForm('/getInstallationDevices'),
        headers: { 'api-key': key, 'content-type': 'application/x-www-form-urlencoded' },
        payload: 'installationId=5',
      });
      expect(post.statusCode).toBe(200);
      expect((post.json() as { installationId: number }).installationId).toBe(5);
    } finally {
      await front.close();
    }
  });

  it('relays GET and POST to the API itself by default, without logging the key', async () => {
    const before = api.logLines.length;
    const direct = await fetch(`${origin}${base}/getInstallations`, {
      headers: { 'api-key': key },
    });
    const viaProxy = await fetch(`${origin}${proxied('/getInstallations')}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(viaProxy.status).toBe(200);
    expect(await viaProxy.text()).toBe(await direct.text());
    const post = await fetch(`${origin}${proxied('/getInstallationDevices')}`, {
      method: 'POST',
      headers: { 'api-key': key, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'installationId=5',
    });
    expect(post.status).toBe(200);
    expect(((await post.json()) as { installationId: number }).installationId).toBe(5);
    const denied = await fetch(`${origin}${proxied('/getInstallations')}`);
    expect(denied.status).toBe(401);
    expect(await denied.json()).toEqual({ valid: false, error: 'UNAUTHORIZED' });
    expect(api.logLines.slice(before).join('')).not.toContain(key);
  });

  it('answers 502 when the API is unreachable, redirects or answers non-JSON; 504 on timeout', async () => {
    const unreachable = testApi({ env: { API_DOCS_UPSTREAM_URL: 'http://127.0.0.1:1' } });
    const misbehaving = testApi({
      env: { API_DOCS_UPSTREAM_URL: fakeUrl, API_DOCS_PROXY_TIMEOUT_MS: '300' },
    });
    try {
      const res = await unreachable.app.inject({ url: proxied('/getInstallations') });
      expect(res.statusCode).toBe(502);
      expect(res.json()).toEqual({ valid: false, error: 'BAD_GATEWAY' });
      for (const path of ['/redirect', '/html', '/badjson']) {
        const r = await misbehaving.app.inject({ url: proxied(path) });
        expect(r.statusCode, path).toBe(502);
      }
      const started = Date.now();
      const slow = await misbehaving.app.inject({ url: proxied('/slow') });
      expect(slow.statusCode).toBe(504);
      expect(slow.json()).toEqual({ valid: false, error: 'GATEWAY_TIMEOUT' });
      expect(Date.now() - started).toBeLessThan(2_000);
      const ok = await misbehaving.app.inject({ url: proxied('/fine') });
      expect(ok.statusCode).toBe(200);
    } finally {
      await unreachable.close();
      await misbehaving.close();
    }
  });

  it('forwards nothing outside the API base', async () => {
    const res = await api.app.inject({ url: '/docs/proxy/metrics' });
    expect(res.statusCode).toBe(404);
  });
});
