import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT, run } from './support/tools.js';

// `npm run lint` runs Spectral with .spectral.yaml over docs/openapi.json: it passes on the
// committed document and fails on one with an undescribed property or operation.

const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const committed = JSON.parse(readFileSync(join(ROOT, 'docs/openapi.json'), 'utf8'));

function lint(doc: unknown): { ok: boolean; output: string } {
  const file = join(dir, `doc-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify(doc));
  try {
    const output = run(
      'spectral',
      ['lint', '--fail-severity=warn', '--ruleset', join(ROOT, '.spectral.yaml'), file],
      ROOT,
    );
    return { ok: true, output };
  } catch (e) {
    return { ok: false, output: (e as Error).message };
  }
}

describe('the OpenAPI rule set', () => {
  it('passes the committed document', () => {
    expect(lint(committed)).toMatchObject({ ok: true });
  });

  it('fails an undescribed property and an undescribed operation', () => {
    const property = structuredClone(committed);
    delete property.components.schemas.Battery.properties.soe.description;
    const result = lint(property);
    expect(result.ok).toBe(false);
    expect(result.output).toContain('property-description');
    const operation = structuredClone(committed);
    delete operation.paths['/getInstallationDevices'].get.description;
    expect(lint(operation).output).toContain('operation-description');
  });
});
