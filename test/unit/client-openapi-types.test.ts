import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ERROR_CODES,
  type ErrorCode,
  OPERATION_TRANSPORT_ERRORS,
} from '../../api/errors/error-catalog.js';
import type { ErrorCode as ClientErrorCode } from '../../clients/typescript/src/index.js';

// The client's types are generated from the served document (docs/openapi.json) by
// openapi-typescript; regenerate with `npm run generate -w clients/typescript`.
const ROOT = join(import.meta.dirname, '../..');
const CLIENT = join(ROOT, 'clients/typescript');

/** The generator's CLI as the client package resolves it (hoisted to the root or not). */
function openapiTypescriptCli(): string {
  const require = createRequire(join(CLIENT, 'package.json'));
  const manifest = require.resolve('openapi-typescript/package.json');
  const { bin } = JSON.parse(readFileSync(manifest, 'utf8')) as { bin: Record<string, string> };
  return join(dirname(manifest), bin['openapi-typescript'] as string);
}

describe('client types', () => {
  it('are what openapi-typescript makes of docs/openapi.json today', () => {
    const generated = execFileSync(
      process.execPath,
      [openapiTypescriptCli(), join(ROOT, 'docs/openapi.json')],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const committed = readFileSync(join(CLIENT, 'src/generated/openapi.ts'), 'utf8');
    expect(committed, 'stale: run `npm run generate -w clients/typescript`').toBe(generated);
  });

  it('type errors by exactly the catalog codes an operation may answer', () => {
    // Compile time: every such code is a client code, and the client knows no other.
    type OperationTransport = (typeof OPERATION_TRANSPORT_ERRORS)['post'][number];
    const all: ClientErrorCode[] = [...ERROR_CODES, ...OPERATION_TRANSPORT_ERRORS.post];
    type Unknown = Exclude<ClientErrorCode, ErrorCode | OperationTransport>;
    const none: [Unknown] extends [never] ? true : false = true;
    expect(none).toBe(true);
    expect(all).toContain('RATE_LIMITED');
  });
});
