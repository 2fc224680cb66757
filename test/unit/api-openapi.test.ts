import { readFileSync } from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import {
  BULK_FLOW_ERRORS,
  ENDPOINT_ERRORS,
  ERROR_CATALOG,
  ERROR_CODES,
  errorStatus,
  FLOW_STREAM_ERRORS,
  OPERATION_TRANSPORT_ERRORS,
  QUOTA_ERRORS,
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
    };
    const seen = new Set<string>();
    const operations = {
      ...ENDPOINT_ERRORS,
      getInstallationsCurrentEnergyFlow: BULK_FLOW_ERRORS,
    };
    for (const [endpoint, codes] of Object.entries(operations)) {
      for (const method of ['get', 'head', 'post'] as const) {
        const responses = doc.paths[`/${endpoint}`]?.[method]?.responses ?? {};
        const statuses = Object.keys(responses).filter((s) => s !== '200' && s !== '304');
        // 304 on GET and HEAD only: preconditions do not apply to POST (RFC 9110 §13.2.1).
        expect('304' in responses, `${endpoint} ${method}`).toBe(method !== 'post');
        // The HTTP layer's answers too (413 and 415 on POST): a generated client must know them;
        // and 429 of quotas, which an operator may turn on.
        const all = [
          ...codes,
          ...QUOTA_ERRORS,
          ...OPERATION_TRANSPORT_ERRORS[method === 'post' ? 'post' : 'get'],
        ];
        expect(statuses.sort(), `${endpoint} ${method}`).toEqual(
          [...new Set(all.map((c) => String(errorStatus(c))))].sort(),
        );
        for (const code of all) {
          expect(responses[errorStatus(code)]?.description).toContain(code);
          seen.add(code);
        }
      }
    }
    // beyond.md §5: the stream, GET and HEAD, refusals as JSON; it never charges a quota.
    for (const method of ['get', 'head'] as const) {
      const responses =
        doc.paths['/streams/installationCurrentEnergyFlow']?.[method]?.responses ?? {};
      const all = [...FLOW_STREAM_ERRORS, ...OPERATION_TRANSPORT_ERRORS.get];
      expect(Object.keys(responses).sort(), `stream ${method}`).toEqual(
        [...new Set(['200', ...all.map((c) => String(errorStatus(c)))])].sort(),
      );
      for (const code of all) {
        expect(responses[errorStatus(code)]?.description).toContain(code);
        seen.add(code);
      }
    }
    expect([...seen].sort()).toEqual(expect.arrayContaining([...ERROR_CODES].sort()));
    expect(doc.paths['/getInstallations']?.post?.responses).toHaveProperty('413');
    expect(doc.paths['/getInstallations']?.post?.responses).toHaveProperty('415');
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
