import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/stack.js';
import { launchChromium } from '../support-api/chromium.js';
import { type ObservedSystem, startObservedSystem } from '../support-ops/demo-prometheus.js';

// What an operator opens first: the demo's Prometheus graph page, in Chromium, charting both
// targets' `up` series; then the read model's console, its streams panels drawn from the
// stream rules (each refusal limit and close reason a line from the start, at 0).
describe("the demo's Prometheus in a browser", () => {
  let system: ObservedSystem;
  let chromium: Awaited<ReturnType<typeof launchChromium>>;

  beforeAll(async () => {
    system = await startObservedSystem();
    chromium = await launchChromium();
  }, 180_000);
  afterAll(async () => {
    await chromium?.close();
    await system?.stop();
  });

  it('charts the API and the consumers on the graph page', async () => {
    await system.prometheus.targetsUp();
    const page = await chromium.browser.newPage();
    await page.goto(`${system.prometheus.url}/graph?g0.expr=up&g0.tab=0&g0.range_input=5m`);
    const legend = page.locator('.rickshaw_legend');
    await expect
      .poll(async () => (await legend.count()) > 0 && (await legend.innerText()), {
        timeout: 20_000,
      })
      .toMatch(/job="api"[\s\S]*job="consumers"|job="consumers"[\s\S]*job="api"/);
    expect(await page.locator('.graph_area svg path').count()).toBeGreaterThanOrEqual(2);
  });

  it('draws the streams panels of the read-model console', async () => {
    await system.prometheus.targetsUp();
    // The console renders what the rules hold when the page loads: open it once they have series.
    const count = async (expr: string) =>
      (
        await system.prometheus.api<{ result: unknown[] }>(
          `query?query=${encodeURIComponent(expr)}`,
        )
      ).result.length;
    await waitFor('the stream rules evaluated', async () =>
      (await count('limit:api_stream_refusals:rate2m')) === 5 &&
      (await count('reason:api_stream_closes:rate2m')) === 5 &&
      (await count('job:api_stream_opens:rate2m')) === 1 &&
      (await count('instance:api_streams_open:ratio_max')) === 1
        ? true
        : undefined,
    );
    const page = await chromium.browser.newPage();
    await page.goto(`${system.prometheus.url}/consoles/read-model.html#pdur=300`);
    await expect.poll(() => page.locator('#streams h2').innerText()).toBe('Streams');
    const legend = (id: string) => page.locator(`#${id} .rickshaw_legend`);
    const legendText = (id: string) =>
      expect.poll(async () => (await legend(id).count()) > 0 && (await legend(id).innerText()), {
        timeout: 30_000,
      });
    for (const limit of [
      'streams-per-key',
      'streams-per-application',
      'streams-per-client',
      'streams-max',
      'playground-proxy',
    ]) {
      await legendText('streams_refusals').toContain(limit);
    }
    for (const line of ['opens', 'closes client', 'closes revoked', 'closes slow-reader']) {
      await legendText('streams_flow').toContain(line);
    }
    await legendText('streams_open').toMatch(/127\.0\.0\.1:\d+/);
    await legendText('streams_ratio').toMatch(/127\.0\.0\.1:\d+/);
    for (const id of ['streams_open', 'streams_ratio', 'streams_flow', 'streams_refusals']) {
      expect(await page.locator(`#${id} svg path`).count(), id).toBeGreaterThanOrEqual(1);
    }
  });
});
