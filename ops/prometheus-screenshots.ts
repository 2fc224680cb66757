import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

// Screenshots of the demo Prometheus for docs/operations.md: the read model's dashboard it serves
// (ops/prometheus/consoles/read-model.html) and its alerts page. Run while the demo is under
// load: npx tsx ops/prometheus-screenshots.ts [--out docs] [--range 5m]

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? fallback) : fallback;
};
const base = `http://127.0.0.1:${process.env.PROMETHEUS_PORT ?? '19090'}`;
const out = arg('out', 'docs');
const range = arg('range', '5m');
const seconds = Number.parseInt(range, 10) * ({ m: 60, h: 3600 }[range.slice(-1)] ?? 1);

mkdirSync(out, { recursive: true });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });

// The range travels in the URL's hash, as the page's range control writes it.
const hash = encodeURIComponent(JSON.stringify({ duration: seconds, endTime: 0 }));
await page.goto(`${base}/consoles/read-model.html#pctc${hash}`);
// Each panel ends with a chart or a message; none is still loading.
await page.waitForFunction(
  `document.querySelectorAll('.prom_graph_loading').length === 0 &&
    document.querySelectorAll('.rm_panels > div').length ===
    document.querySelectorAll('.rm_panels .rickshaw_graph > svg, .rm_panels .prom_graph_error').length`,
  undefined,
  { timeout: 20_000 },
);
// Lines without anti-aliasing: the PNG of the whole page stays small enough for the docs.
await page.addStyleTag({ content: 'svg * { shape-rendering: crispEdges; }' });
await page.screenshot({ path: `${out}/dashboard-read-model.png`, fullPage: true });
console.log(`${out}/dashboard-read-model.png  /consoles/read-model.html`);

await page.setViewportSize({ width: 1000, height: 640 });
await page.goto(`${base}/classic/alerts`);
await page.screenshot({ path: `${out}/prometheus-alerts.png` });
console.log(`${out}/prometheus-alerts.png`);
await browser.close();
