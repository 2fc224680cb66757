import { mkdirSync } from 'node:fs';
import { chromium } from 'playwright-core';

// Screenshots of the demo Prometheus's graph pages for docs/operations.md: the dashboard's main
// signals (ops/grafana/read-model.json) charted by Prometheus itself. Run while the demo is
// under load: npx tsx ops/prometheus-screenshots.ts [--out docs] [--range 15m]

const arg = (name: string, fallback: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? (process.argv[i + 1] ?? fallback) : fallback;
};
const base = `http://127.0.0.1:${process.env.PROMETHEUS_PORT ?? '19090'}`;
const out = arg('out', 'docs');
const range = arg('range', '15m');

const charts = {
  'api-requests': 'route:api_requests:rate2m',
  'api-p99': 'route:api_request_duration_seconds:p99_2m',
  'process-cpu': 'instance:process_cpu_cores:rate2m',
  'freshness-p99': 'topic:ingest_batch_visible_delay_seconds:p99_2m',
  'consumer-lag': 'topic:ingest_consumer_lag:sum',
};

mkdirSync(out, { recursive: true });
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
const page = await browser.newPage({ viewport: { width: 1000, height: 640 } });
for (const [name, expr] of Object.entries(charts)) {
  const query = `g0.expr=${encodeURIComponent(expr)}&g0.tab=0&g0.range_input=${range}`;
  await page.goto(`${base}/classic/graph?${query}`);
  await page.locator('.rickshaw_legend').waitFor({ timeout: 20_000 });
  await page.screenshot({ path: `${out}/prometheus-${name}.png`, fullPage: true });
  console.log(`${out}/prometheus-${name}.png  ${expr}`);
}
await page.goto(`${base}/classic/alerts`);
await page.screenshot({ path: `${out}/prometheus-alerts.png` });
console.log(`${out}/prometheus-alerts.png`);
await browser.close();
