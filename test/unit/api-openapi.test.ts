import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import {
  ENDPOINT_ERRORS,
  ERROR_CATALOG,
  ERROR_CODES,
  TRANSPORT_ERRORS,
} from '../../api/errors/error-catalog.js';
import { buildOpenApiDocument } from '../../api/openapi/openapi-document.js';
import { DEFAULT_BASE_PATH, openApiFileContent } from '../../api/openapi/openapi-file.js';

const committed = readFileSync(new URL('../../docs/openapi.json', import.meta.url), 'utf8');

describe('OpenAPI document', () => {
  it('is committed as generated (run `npx tsx api/openapi/export.ts` after a change)', () => {
    expect(committed).toBe(openApiFileContent(DEFAULT_BASE_PATH));
  });

  it('is a valid OpenAPI 3.1 document, version 1.0.0', async () => {
    const validator = new Validator();
    const result = await validator.validate(JSON.parse(committed));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
    expect(JSON.parse(committed).info.version).toBe('1.0.0');
  });

  it('documents every code of the error catalog, each at its status, per endpoint', () => {
    const doc = buildOpenApiDocument('/x') as {
      paths: Record<string, Record<string, { responses: Record<string, { description: string }> }>>;
      components: { schemas: Record<string, { properties: { error: { enum: string[] } } }> };
    };
    const seen = new Set<string>();
    for (const [endpoint, codes] of Object.entries(ENDPOINT_ERRORS)) {
      for (const method of ['get', 'post']) {
        const responses = doc.paths[`/${endpoint}`]?.[method]?.responses ?? {};
        const statuses = Object.keys(responses).filter((s) => s !== '200');
        expect(statuses.sort()).toEqual(
          [...new Set(codes.map((c) => String(ERROR_CATALOG[c].status)))].sort(),
        );
        for (const code of codes) {
          expect(responses[ERROR_CATALOG[code].status]?.description).toContain(code);
          seen.add(code);
        }
      }
    }
    expect([...seen].sort()).toEqual([...ERROR_CODES].sort());
  });
});

describe('docs/api.md', () => {
  const doc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
  it('lists every code of the error catalog with its status', () => {
    for (const code of ERROR_CODES) {
      expect(doc).toContain(`| ${ERROR_CATALOG[code].status} | ${code} |`);
    }
  });
  it('lists every HTTP-layer code outside the table with its status', () => {
    for (const [code, { status }] of Object.entries(TRANSPORT_ERRORS)) {
      expect(doc).toContain(`| ${status} | ${code} |`);
    }
  });
});
