import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testApi } from '../support-api/api-harness.js';
import { launchChromium } from '../support-api/chromium.js';
import { installation, newApiKey } from '../support-api/fixtures.js';

// What a browser sees: the playground works offline through its proxy, and a page of another
// origin cannot read the API.
describe('API in a browser', () => {
  const api = testApi();
  const base = api.config.api.basePath;
  const key = newApiKey();
  let origin: string;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let foreign: Server;
  let foreignOrigin: string;

  beforeAll(async () => {
    await api.ready();
    await api.seed.installation(installation(77, { name: 'Playground Plant' }));
    await api.seed.liveKey(key, {
      app: 1,
      installations: [installation(77, { name: 'Playground Plant' })],
    });
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    foreign = createServer((_req, res) =>
      res.writeHead(200, { 'content-type': 'text/html' }).end('<html><body>foreign</body></html>'),
    );
    await new Promise<void>((resolve) => foreign.listen(0, '127.0.0.1', resolve));
    foreignOrigin = `http://127.0.0.1:${(foreign.address() as AddressInfo).port}`;
    chromium = await launchChromium();
  });
  afterAll(async () => {
    await chromium?.close();
    foreign.close();
    await api.close();
  });

  it('loads the playground offline, takes a key and shows a successful call', async () => {
    const page = await chromium.browser.newPage();
    const offsite: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(origin) && !r.url().startsWith('data:')) offsite.push(r.url());
    });
    await page.goto(`${origin}/docs/`);
    const keyInput = page.locator('input.scalar-password-input').first();
    await keyInput.waitFor({ timeout: 20_000 });
    await keyInput.fill(key);
    await page
      .getByRole('button', { name: /test request/i })
      .first()
      .click();
    const proxied = page.waitForResponse((r) => r.url().includes(`/docs/proxy${base}/`));
    await page.getByRole('button', { name: /^send/i }).first().click();
    const response = await proxied;
    expect(response.status()).toBe(200);
    expect(response.request().headers()['api-key']).toBe(key);
    await expect
      .poll(async () => page.getByText('200 OK').count(), { timeout: 10_000 })
      .toBeGreaterThan(0);
    await expect
      .poll(async () => page.getByText('Playground Plant').count(), { timeout: 10_000 })
      .toBeGreaterThan(0);
    expect(offsite).toEqual([]);
    await page.close();
  });

  it("shows the contract's descriptions: an operation's, and its response fields'", async () => {
    const page = await chromium.browser.newPage();
    await page.goto(`${origin}/docs/`);
    // The operation's description, as the document carries it (issue 54).
    await expect
      .poll(async () => page.getByText(/continued access of its owner are required/).count(), {
        timeout: 20_000,
      })
      .toBeGreaterThan(0);
    // Its 200 response opened: the fields' descriptions, down into the Installation record.
    await page.getByText('Success', { exact: true }).first().click();
    await expect
      .poll(async () => page.getByText(/may read now \(a grant, and its owner/).count(), {
        timeout: 10_000,
      })
      .toBeGreaterThan(0);
    await page.close();
  });

  it('gives a page of another origin no way to read the API', async () => {
    const page = await chromium.browser.newPage();
    await page.goto(foreignOrigin);
    const outcome = await page.evaluate(
      async ({ url, apiKey }) => {
        const attempt = async (init: RequestInit) => {
          try {
            const res = await fetch(url, init);
            return `read ${res.status}`;
          } catch (error) {
            return `failed ${(error as Error).name}`;
          }
        };
        return {
          withKey: await attempt({ headers: { 'Api-Key': apiKey } }),
          bearer: await attempt({ headers: { Authorization: `Bearer ${apiKey}` } }),
          simple: await attempt({}),
          form: await attempt({
            method: 'POST',
            headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
            body: 'installationId=77',
          }),
        };
      },
      { url: `${origin}${base}/getInstallations`, apiKey: key },
    );
    expect(outcome).toEqual({
      withKey: 'failed TypeError',
      bearer: 'failed TypeError',
      simple: 'failed TypeError',
      form: 'failed TypeError',
    });
    await page.close();
  });
});
