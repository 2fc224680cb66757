import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureCommand, npmTool, ROOT, run } from './support/tools.js';

// issue 54 item 4: docs/openapi.json in the generators integrators use, each producing a client
// that compiles, with the domain's descriptions on its types and ids as 64-bit integers.
// (openapi-typescript, the client package's own generator, is test/unit/client-openapi-types.)

const DOC_PATH = join(ROOT, 'docs/openapi.json');
// @hey-api/openapi-ts drives the TypeScript 5 compiler API, which TypeScript 7 (the project's)
// no longer has, and npm cannot nest a second TypeScript for a peer the root's 7 satisfies: so it
// lives in a directory of its own under .local/generators, with TypeScript 5.
const HEY_API = ['@hey-api/openapi-ts@0.99.0', 'typescript@5.9.3'];

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'openapi-clients-'));
  ensureCommand('javac', 'openjdk-17-jdk-headless');
  ensureCommand('mvn', 'maven');
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('docs/openapi.json in the generators integrators use', () => {
  it('@hey-api/openapi-ts makes a client that tsc compiles, its types described', () => {
    const tool = npmTool('hey-api', HEY_API);
    const out = join(dir, 'hey-api');
    run(join(tool, 'node_modules/.bin/openapi-ts'), ['-i', DOC_PATH, '-o', out], dir);
    run(
      'tsc',
      [
        '--noEmit',
        '--strict',
        '--target',
        'es2022',
        '--module',
        'nodenext',
        '--skipLibCheck',
        'index.ts',
      ],
      out,
    );
    const types = readFileSync(join(out, 'types.gen.ts'), 'utf8');
    const battery = /export type Battery = \{[\s\S]*?\n\};/.exec(types)?.[0] ?? '';
    expect(battery).toMatch(/State of energy, percent 0-100[^*]*\*\/\s*soe: number \| null;/);
    expect(battery).toContain('Positive: charging; negative: discharging');
    // The stream's events are types of their own (components.schemas)...
    expect(types).toMatch(
      /export type FlowStreamEnergyFlowEvent = \{[\s\S]*?data: EnergyFlowResponse;/,
    );
    expect(types).toContain('export type FlowStreamRevokedEvent = {');
    // ...but the stream operation does not use them: hey-api reads the text/event-stream schema
    // (`type: string`, the events as its contentSchema, OpenAPI 3.1's way) as `string`, and its
    // SSE client yields each event's `data:` JSON-parsed, typed as that string. A oneOf of the
    // data bodies as the schema would type it (tried), but would tell every other tool that the
    // body is one JSON object; OpenAPI 3.2's itemSchema, the proper way, 0.99.0 does not read.
    expect(types).toMatch(
      /export type StreamInstallationCurrentEnergyFlowResponses = \{[^}]*?\n {4}200: string;\n\};/,
    );
    const sdk = readFileSync(join(out, 'sdk.gen.ts'), 'utf8');
    expect(sdk).toMatch(
      /streamInstallationCurrentEnergyFlow = [^\n]*ServerSentEventsResult<StreamInstallationCurrentEnergyFlowResponses>/,
    );
    const count = types.match(/^export type /gm)?.length ?? 0;
    console.log(`hey-api: ${count} exported types, compiled`);
  });

  it('OpenAPI Generator (java, native) makes a client that Maven compiles, ids as Long', () => {
    const out = join(dir, 'java');
    // The npm wrapper fetches the jar openapitools.json pins from Maven Central, once.
    run(
      'openapi-generator-cli',
      [
        'generate',
        '-i',
        DOC_PATH,
        '-g',
        'java',
        '--library',
        'native',
        '-o',
        out,
        '--additional-properties=hideGenerationTimestamp=true,openApiNullable=false,invokerPackage=contracts.client,apiPackage=contracts.client.api,modelPackage=contracts.client.model',
      ],
      ROOT,
    );
    const models = join(out, 'src/main/java/contracts/client/model');
    const battery = readFileSync(join(models, 'Battery.java'), 'utf8');
    expect(battery).toMatch(/private Long id;/);
    expect(battery).toMatch(/private Long installationId;/);
    expect(battery).toContain('State of energy, percent 0-100');
    expect(battery).toMatch(/minimum: 0\s+\*\s+maximum: 100/);
    const installation = readFileSync(join(models, 'Installation.java'), 'utf8');
    expect(installation).toMatch(/private Long id;/);
    run('mvn', ['-q', '-B', 'compile', '-DskipTests'], out, 480_000);
    expect(existsSync(join(out, 'target/classes/contracts/client/api/DefaultApi.class'))).toBe(
      true,
    );
    const sources = readdirSync(models).filter((f) => f.endsWith('.java'));
    expect(sources.filter((f) => /Anonymous|Inner\.java$|OneOf/.test(f))).toEqual([]);
    console.log(`openapi-generator java: ${sources.length} model classes, compiled by mvn`);
  });
});
