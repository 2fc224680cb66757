import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { waitFor } from '../support/stack.js';
import { testApi } from '../support-api/api-harness.js';
import { openSse } from '../support-api/sse-client.js';
import {
  type DemoPrometheus,
  type ObservedSystem,
  startObservedSystem,
} from '../support-ops/demo-prometheus.js';
import { type Harness, iso } from './support/consumer-harness.js';

// The demo's Prometheus scrapes a real API and consumer process on real Kafka and Redis: every
// target up, every rule of ops/prometheus/ loaded and evaluating without error, the series
// the alerts rest on present with the values of a healthy system, and the dashboard it serves
// (ops/prometheus/consoles/read-model.html) rendering them; a stream opened on the API charted
// through the stream rules; a second API replica scraped once it is listed, without a restart.

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

/** A Grafana query with its variables at "All": matchers on `$job`, `$instance`, ... dropped. */
const atAll = (expr: string) =>
  expr.replace(/\{([^}]*)\}/g, (_all, inner: string) => {
    const kept = inner.split(',').filter((m) => !/^\s*\w+=~"\$\w+"\s*$/.test(m));
    return kept.length > 0 ? `{${kept.join(',')}}` : '';
  });

const dashboardQueries: string[] = JSON.parse(
  readFileSync(new URL('../../ops/grafana/read-model.json', import.meta.url), 'utf8'),
).panels.flatMap((p: { targets?: { expr: string }[] }) =>
  (p.targets ?? []).map((t) => atAll(t.expr)),
);

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

  it('charts a stream: open per process, then closed by its client; every limit and reason at 0 before', async () => {
    const { api } = system;
    const ID = 4343;
    const key = newApiKey();
    await api.seed.installation(installation(ID));
    await api.seed.liveKey(key, { app: 43, installations: [installation(ID)] });
    const observedAt = Date.now() + 60_000;
    await api.seed.devices(
      ID,
      [{ category: 'battery', record: device('battery', ID, ID, observedAt, { soe: 40 }) }],
      Date.now(),
      120,
    );
    const apiPort = (api.app.server.address() as AddressInfo).port;
    /** The series of `expr` by the value of `label`. */
    const values = async (expr: string, label: string) =>
      Object.fromEntries(
        (await query(expr)).result.map((s) => [s.metric[label] ?? '', Number(s.value[1])]),
      );
    const limits = await waitFor('every refusal limit recorded', async () => {
      const v = await values('limit:api_stream_refusals:rate2m', 'limit');
      return Object.keys(v).length === 5 ? v : undefined;
    });
    expect(limits).toEqual({
      'streams-per-key': 0,
      'streams-per-application': 0,
      'streams-per-client': 0,
      'streams-max': 0,
      'playground-proxy': 0,
    });
    const stream = await openSse(
      `http://127.0.0.1:${apiPort}${api.config.api.basePath}/streams/installationCurrentEnergyFlow?installationId=${ID}`,
      { 'api-key': key },
    );
    expect(stream.status).toBe(200);
    const instance = `127.0.0.1:${apiPort}`;
    await waitFor('the open stream recorded', async () =>
      (await values('instance:api_streams_open:sum{job="api"}', 'instance'))[instance] === 1
        ? true
        : undefined,
    );
    expect(
      (await values('instance:api_streams_open:ratio_max{job="api"}', 'instance'))[instance],
    ).toBe(1 / 2048);
    stream.close();
    const closes = await waitFor('the close recorded by reason', async () => {
      const v = await values('reason:api_stream_closes:rate2m', 'reason');
      return (v.client ?? 0) > 0 ? v : undefined;
    });
    expect(Object.keys(closes).sort()).toEqual([
      'client',
      'error',
      'revoked',
      'shutdown',
      'slow-reader',
    ]);
    expect(closes.revoked).toBe(0);
    expect((await values('job:api_stream_opens:rate2m', 'job'))['']).toBeGreaterThan(0);
  });

  it('serves the dashboard: its four sections, with the scraped processes in its tables', async () => {
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
    for (const section of ['API', 'Streams', 'Consumers', 'Capacity']) {
      expect(page).toContain(`<h2>${section}</h2>`);
    }
    // The streams table: the API process, and a row per refusal limit.
    const streams = page.slice(
      page.indexOf('<h2>Streams</h2>'),
      page.indexOf('<h2>Consumers</h2>'),
    );
    expect(streams).toMatch(/<td>127\.0\.0\.1:\d+<\/td>/);
    for (const limit of ['streams-per-key', 'streams-max', 'playground-proxy']) {
      expect(streams).toContain(`<td>${limit}</td>`);
    }
  });

  it("charts each of the Grafana dashboard's queries on the console too", () => {
    expect(dashboardQueries.filter((expr) => !consoleTemplate.includes(expr))).toEqual([]);
  });

  it('scrapes a second API replica once it is listed, without a restart', async () => {
    const second = testApi();
    try {
      await second.ready();
      await second.app.listen({ host: '127.0.0.1', port: 0 });
      const ports = [system.api, second].map((a) => (a.app.server.address() as AddressInfo).port);
      await prometheus.scrapeApis(ports);
      const up = await prometheus.targetsUpByInstance();
      expect(up.filter((t) => t.startsWith('api '))).toEqual(
        ports.map((p) => `api 127.0.0.1:${p}`).sort(),
      );
      await waitFor('both replicas in the open-streams rule', async () =>
        (await query('instance:api_streams_open:sum{job="api"}')).result.length === 2
          ? true
          : undefined,
      );
      // Back to the one replica before the second stops, so no ApiDown is left pending.
      await prometheus.scrapeApis([ports[0] as number]);
      expect(await prometheus.targetsUp()).toEqual(['api', 'consumers']);
    } finally {
      await second.close();
    }
  });
});
