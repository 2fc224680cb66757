import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support-api/chromium.js';
import { type ObservedSystem, startObservedSystem } from '../support-ops/demo-prometheus.js';

// What an operator opens first: the demo's Prometheus graph page, in Chromium, charting both
// targets' `up` series.
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
});
