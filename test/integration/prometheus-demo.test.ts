import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { waitFor } from '../support/stack.js';
import {
  type DemoPrometheus,
  type ObservedSystem,
  startObservedSystem,
} from '../support-ops/demo-prometheus.js';
import { type Harness, iso } from './support/consumer-harness.js';

// The demo's Prometheus scrapes a real API and consumer process on real Kafka and Redis: every
// target up, every rule of ops/prometheus/ loaded and evaluating without error, the series
// the alerts rest on present with the values of a healthy system, and the dashboard it serves
// (ops/prometheus/consoles/read-model.html) rendering them.

interface Rule {
  name: string;
  health: string;
  lastError?: string;
}
interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

const ruleNames = ['recording', 'alerts'].flatMap((file) =>
  parse(
    readFileSync(new URL(`../../ops/prometheus/${file}.rules.yml`, import.meta.url), 'utf8'),
  ).groups.flatMap((g: { rules: { record?: string; alert?: string }[] }) =>
    g.rules.map((r) => r.record ?? r.alert),
  ),
);

const dashboardQueries: string[] = JSON.parse(
  readFileSync(new URL('../../ops/grafana/read-model.json', import.meta.url), 'utf8'),
).panels.flatMap((p: { targets?: { expr: string }[] }) => (p.targets ?? []).map((t) => t.expr));

const consoleTemplate = readFileSync(
  new URL('../../ops/prometheus/consoles/read-model.html', import.meta.url),
  'utf8',
);

describe("the demo's Prometheus", () => {
  let system: ObservedSystem;
  let prometheus: DemoPrometheus;
  let consumers: Harness;

  beforeAll(async () => {
    system = await startObservedSystem();
    ({ prometheus, consumers } = system);
  }, 180_000);
  afterAll(() => system?.stop());

  const query = (expr: string) =>
    prometheus.api<{ result: Sample[] }>(`query?query=${encodeURIComponent(expr)}`);

  it('has every target up and every rule loaded and evaluating', async () => {
    expect(await prometheus.targetsUp()).toEqual(['api', 'consumers']);
    const rules = await waitFor('every rule evaluated', async () => {
      const { groups } = await prometheus.api<{ groups: { rules: Rule[] }[] }>('rules');
      const all = groups.flatMap((g) => g.rules);
      return all.every((r) => r.health !== 'unknown') ? all : undefined;
    });
    expect(rules.map((r) => r.name).sort()).toEqual([...ruleNames].sort());
    expect(rules.filter((r) => r.health !== 'ok')).toEqual([]);
  });

  it('reads a healthy system: ready, connected to Redis, events visible, no alert firing', async () => {
    const installationId = 4242;
    await consumers.send(consumers.config.topics.telemetry, String(installationId), {
      type: 'device.state',
      installationId,
      category: 'inverter',
      deviceId: 424201,
      observedAt: iso(Date.now()),
      state: { status: 4, powerAc: 100 },
    });
    await consumers.settled();
    const value = async (expr: string) => {
      const { result } = await query(expr);
      return result.length === 1 ? Number(result[0]?.value[1]) : undefined;
    };
    const topic = consumers.config.topics.telemetry;
    await waitFor(
      'the batch counted in the freshness histogram',
      async () =>
        (await value(`ingest_batch_visible_delay_seconds_count{topic="${topic}"}`)) === 1
          ? true
          : undefined,
      20_000,
    );
    expect(await value('ingest_ready')).toBe(1);
    expect(await value('min(redis_client_connected)')).toBe(1);
    expect(await value('count(redis_client_connected)')).toBe(2);
    expect(await value('min(redis_memory_used_bytes)')).toBeGreaterThan(0);
    expect(await value('max(ingest_read_model_lost)')).toBe(0);
    expect((await query('ALERTS{alertstate="firing"}')).result).toEqual([]);
  });

  it('answers every query of the dashboard; each series it names is a rule or is scraped', async () => {
    await prometheus.targetsUp();
    for (const expr of dashboardQueries) {
      await expect(query(expr), expr).resolves.toBeDefined();
      if (/^[a-z_:]+$/.test(expr) && !ruleNames.includes(expr)) {
        expect((await query(`count(${expr})`)).result, expr).toHaveLength(1);
      }
    }
  });

  it('serves the dashboard: its three sections, with the scraped processes in its tables', async () => {
    await prometheus.targetsUp();
    const page = await waitFor('both processes in the capacity table', async () => {
      const res = await fetch(`${prometheus.url}/consoles/read-model.html`);
      expect(res.status).toBe(200);
      const html = await res.text();
      return /<td>api 127\.0\.0\.1:\d+<\/td>/.test(html) &&
        /<td>consumers 127\.0\.0\.1:\d+<\/td>/.test(html)
        ? html
        : undefined;
    });
    for (const section of ['API', 'Consumers', 'Capacity']) {
      expect(page).toContain(`<h2>${section}</h2>`);
    }
  });

  it("charts each of the Grafana dashboard's queries on the console too", () => {
    expect(dashboardQueries.filter((expr) => !consoleTemplate.includes(expr))).toEqual([]);
  });
});
