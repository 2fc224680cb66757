import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { type TestApi, testApi } from '../support-api/api-harness.js';
import { launchChromium } from '../support-api/chromium.js';

/** Where a run leaves what the user saw (for a person checking the page; not asserted). */
const screenshot = (pageOrigin: string, step: string) =>
  join(tmpdir(), `playground-${new URL(pageOrigin).port}-${step}.png`);

// What a browser sees: the playground works offline, its snippets name the API's own address,
// and its try-it (a list and the stream) answers; both when it shows this server (direct calls
// on the page's origin) and with API_DOCS_UPSTREAM_URL (through its proxy). A page of another
// origin cannot read the API.
describe('API in a browser', () => {
  const api = testApi();
  const base = api.config.api.basePath;
  const key = newApiKey();
  const plant = installation(77, { name: 'Playground Plant' });
  let origin: string;
  /** A second API whose playground shows the first one: its own Redis holds nothing. */
  let front: TestApi;
  let frontOrigin: string;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;
  let foreign: Server;
  let foreignOrigin: string;

  beforeAll(async () => {
    await api.ready();
    await api.seed.installation(plant);
    await api.seed.liveKey(key, { app: 1, installations: [plant] });
    await api.seed.devices(
      77,
      [
        {
          category: 'battery',
          record: device('battery', 77, 77, Date.now() + 60_000, { soe: 40 }),
        },
      ],
      Date.now(),
      120,
    );
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    front = testApi({ env: { API_DOCS_UPSTREAM_URL: origin } });
    await front.ready();
    frontOrigin = await front.app.listen({ host: '127.0.0.1', port: 0 });
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
    await front?.close();
    await api.close();
  });

  /**
   * Opens the playground at `pageOrigin`, types the key, and checks what a user sees: a snippet
   * naming the API's base URL, a list and the stream's first event, each by "Test Request".
   * `sent(path)` is the URL the page must call for an API path.
   */
  async function tryThePlayground(pageOrigin: string, sent: (path: string) => string) {
    const page = await chromium.browser.newPage();
    await page.setViewportSize({ width: 1400, height: 1000 });
    const offsite: string[] = [];
    const refusedByPolicy: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(pageOrigin) && !r.url().startsWith('data:')) offsite.push(r.url());
    });
    page.on('console', (m) => {
      if (/Content Security Policy/i.test(m.text())) refusedByPolicy.push(m.text());
    });
    await page.goto(`${pageOrigin}/docs/`);
    const keyInput = page.locator('input.scalar-password-input').first();
    await keyInput.waitFor({ timeout: 20_000 });
    await keyInput.fill(key);

    // (1) The snippet a user copies is the call to make: the API's own base URL.
    const snippet = page
      .locator('pre, code')
      .filter({ hasText: /^curl / })
      .first();
    await snippet.waitFor({ timeout: 10_000 });
    expect(await snippet.textContent()).toContain(`curl ${origin}${base}/getInstallations`);
    expect(await page.getByText('/docs/proxy').count()).toBe(0);

    // (2) getInstallations answers 200 with the data.
    await page
      .getByRole('button', { name: /test request/i })
      .first()
      .click();
    const listed = page.waitForResponse((r) => r.url() === sent('/getInstallations'));
    await page.getByRole('button', { name: /^send/i }).first().click();
    const response = await listed;
    expect(response.status()).toBe(200);
    expect(response.request().headers()['api-key']).toBe(key);
    await expect
      .poll(async () => page.getByText('200 OK').count(), { timeout: 10_000 })
      .toBeGreaterThan(0);
    await expect
      .poll(async () => page.getByText('Playground Plant').count(), { timeout: 10_000 })
      .toBeGreaterThan(0);
    await page.screenshot({ path: screenshot(pageOrigin, 'list') });
    await page.keyboard.press('Escape');

    // (3) The stream's Test Request shows its first energyFlow event as it arrives.
    // By its sidebar entry, as a user goes there: Scalar renders an operation's section only
    // once it is scrolled to, and a hash navigation to an unrendered one sometimes scrolls to
    // nothing (CI once waited 30 s for the button).
    await page.locator('a[href$="GET/streams/installationCurrentEnergyFlow"]').first().click();
    await page
      .locator('section[id$="GET/streams/installationCurrentEnergyFlow"]')
      .getByRole('button', { name: /test request/i })
      .click();
    await page
      .locator('tr#installationId [contenteditable="true"][data-placeholder="Value"]')
      .last()
      .click();
    await page.keyboard.type('77');
    const streamPath = `${base}/streams/installationCurrentEnergyFlow?installationId=77`;
    const streamed = page.waitForResponse((r) => r.url() === sent(streamPath.slice(base.length)));
    await page.getByRole('button', { name: /^send/i }).first().click();
    const stream = await streamed;
    expect(stream.status()).toBe(200);
    expect(stream.headers()['content-type']).toMatch(/^text\/event-stream/);
    await expect
      .poll(async () => page.getByText('event: energyFlow').count(), { timeout: 10_000 })
      .toBeGreaterThan(0);
    await expect
      .poll(async () => page.getByText(/"installationId":77,"data":/).count(), { timeout: 10_000 })
      .toBeGreaterThan(0);
    await page.screenshot({ path: screenshot(pageOrigin, 'stream') });

    expect(offsite).toEqual([]);
    expect(refusedByPolicy).toEqual([]);
    await page.close();
  }

  it('shows this server: snippets name its address, try-it calls it on the page origin', async () => {
    await tryThePlayground(origin, (path) => `${origin}${base}${path}`);
  });

  it('with API_DOCS_UPSTREAM_URL: snippets name the upstream, try-it goes through the proxy', async () => {
    await tryThePlayground(
      frontOrigin,
      (path) =>
        `${frontOrigin}/docs/proxy?${new URLSearchParams([['scalar_url', `${origin}${base}${path}`]])}`,
    );
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
