import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// The alert and recording rules operators load (ops/prometheus/): promtool checks them and runs
// their unit tests (infra/prometheus.sh check installs Debian's prometheus when missing), and
// every alert carries what the person it pages needs and is tested both ways. A runbook link is
// absolute: the external label runbooks_url (where docs/operations.md is browsable) and the
// section's anchor, as the Grafana dashboard's links are (grafana-dashboard.test.ts).

const root = fileURLToPath(new URL('../../', import.meta.url));
const rulesDir = `${root}ops/prometheus/`;

interface Alert {
  alert: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface AlertTest {
  alertname: string;
  exp_alerts?: unknown[];
}

const alerts: Alert[] = parse(readFileSync(`${rulesDir}alerts.rules.yml`, 'utf8')).groups.flatMap(
  (g: { rules: Alert[] }) => g.rules,
);
const alertTests: AlertTest[] = readdirSync(`${rulesDir}tests`)
  .filter((f) => f.endsWith('.test.yml'))
  .flatMap((f) => parse(readFileSync(`${rulesDir}tests/${f}`, 'utf8')).tests)
  .flatMap((t: { alert_rule_test?: AlertTest[] }) => t.alert_rule_test ?? []);

/** GitHub's anchors of the headings in docs/operations.md. */
const anchors = new Set(
  readFileSync(`${root}docs/operations.md`, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('#'))
    .map((line) =>
      line
        .replace(/^#+\s*/, '')
        .toLowerCase()
        .replace(/[^\w\- ]/g, '')
        .replace(/ /g, '-'),
    ),
);

describe('Prometheus rules', () => {
  it('pass promtool check rules and promtool test rules', { timeout: 240_000 }, () => {
    const run = spawnSync('bash', [`${root}infra/prometheus.sh`, 'check'], { encoding: 'utf8' });
    expect(run.stderr + run.stdout).not.toMatch(/FAILED/);
    expect(run.status, run.stderr + run.stdout).toBe(0);
    expect(run.stdout.match(/Unit Testing:.*\n\s+SUCCESS/g)).toHaveLength(
      readdirSync(`${rulesDir}tests`).filter((f) => f.endsWith('.test.yml')).length,
    );
  });

  it.each(alerts.map((a) => [a.alert, a] as const))(
    '%s has a severity, a summary and a runbook in docs/operations.md',
    (_name, alert) => {
      expect(['critical', 'warning']).toContain(alert.labels?.severity);
      expect(alert.annotations?.summary).toBeTruthy();
      const runbook = alert.annotations?.runbook_url ?? '';
      expect(runbook).toBe(`{{ $externalLabels.runbooks_url }}#${alert.alert.toLowerCase()}`);
      expect(anchors).toContain(runbook.split('#')[1]);
    },
  );

  it.each(alerts.map((a) => [a.alert] as const))(
    '%s is tested firing and staying silent',
    (name) => {
      const cases = alertTests.filter((t) => t.alertname === name);
      expect(cases.some((t) => (t.exp_alerts ?? []).length > 0)).toBe(true);
      expect(cases.some((t) => (t.exp_alerts ?? []).length === 0)).toBe(true);
    },
  );
});
