import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// The Grafana dashboard (ops/grafana/read-model.json) as Grafana imports it: a data-source
// variable every query uses, job and instance variables the per-process panels filter on, and
// runbook links that are absolute and agree with the alerts': the same base (its runbooks_url
// constant, the alerts' external label of that name) and an anchor of docs/operations.md.

const root = fileURLToPath(new URL('../../', import.meta.url));

interface Link {
  title: string;
  url: string;
}
interface Target {
  expr: string;
  datasource: { type: string; uid: string };
}
interface Panel {
  type: string;
  title: string;
  datasource?: { type: string; uid: string };
  targets?: Target[];
  links?: Link[];
}
interface Variable {
  name: string;
  type: string;
  query: string | { query: string };
  includeAll?: boolean;
}

const dashboard: {
  __inputs: { name: string; type: string }[];
  templating: { list: Variable[] };
  links: Link[];
  panels: Panel[];
} = JSON.parse(readFileSync(`${root}ops/grafana/read-model.json`, 'utf8'));
const panels = dashboard.panels.filter((p) => p.type !== 'row');
const targets = panels.flatMap((p) => p.targets ?? []);
const variable = (name: string) => dashboard.templating.list.find((v) => v.name === name);

const alerts: string[] = parse(
  readFileSync(`${root}ops/prometheus/alerts.rules.yml`, 'utf8'),
).groups.flatMap((g: { rules: { alert: string }[] }) => g.rules.map((r) => r.alert));
const headings = readFileSync(`${root}docs/operations.md`, 'utf8')
  .split('\n')
  .filter((line) => line.startsWith('#'))
  .map((line) =>
    line
      .replace(/^#+\s*/, '')
      .toLowerCase()
      .replace(/[^\w\- ]/g, '')
      .replace(/ /g, '-'),
  );
/** `${name}`: how Grafana writes a variable's value into a field. */
const grafanaVar = (name: string) => `\${${name}}`;
const links = [...dashboard.links, ...panels.flatMap((p) => p.links ?? [])];

/** Series whose every sample names one process: the panels the job and instance variables pick. */
const perProcess =
  /^(instance:[a-z0-9_:]+|process_[a-z_]+|ingest_ready|redis_client_connected|up)(\{|$)/;

describe('the Grafana dashboard', () => {
  it('asks for its data source through a variable every panel and query uses', () => {
    expect(variable('datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(dashboard.__inputs.filter((i) => i.type === 'datasource')).toEqual([]);
    for (const p of panels) expect(p.datasource?.uid, p.title).toBe(grafanaVar('datasource'));
    for (const t of targets) expect(t.datasource.uid, t.expr).toBe(grafanaVar('datasource'));
  });

  it('has job and instance variables from the scraped targets, each query of a process filtered by both', () => {
    expect(variable('job')).toMatchObject({
      type: 'query',
      query: { query: 'label_values(up, job)' },
      includeAll: true,
    });
    expect(variable('instance')).toMatchObject({
      type: 'query',
      query: { query: 'label_values(up{job=~"$job"}, instance)' },
      includeAll: true,
    });
    const ofProcesses = targets.filter((t) => perProcess.test(t.expr));
    expect(ofProcesses.length).toBeGreaterThanOrEqual(8);
    for (const t of ofProcesses) expect(t.expr).toMatch(/\{job=~"\$job",instance=~"\$instance"\}$/);
    // Fleet-wide series (per route, topic, limit, reason) carry no instance to filter on.
    for (const t of targets.filter((t) => !perProcess.test(t.expr))) {
      expect(t.expr).not.toContain('$');
    }
  });

  it('links every alert its panels watch to its runbook, at the address the alerts link to', () => {
    expect(variable('runbooks_url')).toMatchObject({
      type: 'constant',
      query: grafanaVar('VAR_RUNBOOKS_URL'),
    });
    expect(dashboard.__inputs).toContainEqual(
      expect.objectContaining({ name: 'VAR_RUNBOOKS_URL', type: 'constant' }),
    );
    for (const link of links) {
      expect(link.url).toMatch(/^\$\{runbooks_url\}#[a-z0-9-]+$/);
      expect(headings, link.url).toContain(link.url.split('#')[1]);
    }
    const linked = new Set(links.map((l) => l.url.split('#')[1]));
    expect(alerts.filter((a) => !linked.has(a.toLowerCase()))).toEqual([]);
    expect(linked).toContain('alert-runbooks');
  });

  it('has a streams panel for each stream rule', () => {
    const exprs = targets.map((t) => t.expr.replace(/\{.*\}$/, ''));
    for (const rule of [
      'instance:api_streams_open:sum',
      'instance:api_streams_open:ratio_max',
      'job:api_stream_opens:rate2m',
      'reason:api_stream_closes:rate2m',
      'limit:api_stream_refusals:rate2m',
    ]) {
      expect(exprs).toContain(rule);
    }
  });
});
