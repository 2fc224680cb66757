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
    // Each series evaluated twice (one evaluation interval old): the console's graphs read a range
    // whose last point may fall just before a series' first sample (its step is the range over
    // the panel's width, about a second), and then draw "No timeseries returned" for good.
    const held = (expr: string) => count(`count_over_time(${expr}[5m]) >= 2`);
    await waitFor('the stream rules evaluated twice', async () =>
      (await held('limit:api_stream_refusals:rate2m')) === 5 &&
      (await held('reason:api_stream_closes:rate2m')) === 5 &&
      (await held('job:api_stream_opens:rate2m')) === 1 &&
      (await held('instance:api_streams_open:ratio_max')) === 1 &&
      (await held('instance:api_streams_open:sum')) >= 1
        ? true
        : undefined,
    );
    const page = await chromium.browser.newPage();
    await page.goto(`${system.prometheus.url}/consoles/read-model.html#pdur=300`);
    await expect.poll(() => page.locator('#streams h2').innerText()).toBe('Streams');
    const legend = (id: string) => page.locator(`#${id} .rickshaw_legend`);
    const legendText = async (id: string, expected: string | RegExp) => {
      const poll = expect.poll(
        async () => (await legend(id).count()) > 0 && (await legend(id).innerText()),
        { timeout: 30_000 },
      );
      try {
        await (typeof expected === 'string' ? poll.toContain(expected) : poll.toMatch(expected));
      } catch (error) {
        // prom_console.js writes "Error loading data" or "No timeseries returned" where the
        // legend would be: the failure says which, and what the panel holds.
        const panel = await page.locator(`#${id}`).innerText();
        throw new Error(
          `#${id}: ${(error as Error).message}; the panel shows ${JSON.stringify(panel)}`,
        );
      }
    };
    for (const limit of [
      'streams-per-key',
      'streams-per-application',
      'streams-per-client',
      'streams-max',
      'playground-proxy',
    ]) {
      await legendText('streams_refusals', limit);
    }
    for (const line of ['opens', 'closes client', 'closes revoked', 'closes slow-reader']) {
      await legendText('streams_flow', line);
    }
    await legendText('streams_open', /127\.0\.0\.1:\d+/);
    await legendText('streams_ratio', /127\.0\.0\.1:\d+/);
    for (const id of ['streams_open', 'streams_ratio', 'streams_flow', 'streams_refusals']) {
      expect(await page.locator(`#${id} svg path`).count(), id).toBeGreaterThanOrEqual(1);
    }
  });
});
