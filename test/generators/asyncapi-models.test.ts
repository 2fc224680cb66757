import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import {
  JAVA_DESCRIPTION_PRESET,
  JAVA_JACKSON_PRESET,
  JavaFileGenerator,
  TS_COMMON_PRESET,
  TS_DESCRIPTION_PRESET,
  TypeScriptFileGenerator,
} from '@asyncapi/modelina';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_CATEGORIES } from '../../src/domain/device-fields.js';
import { ensureCommand, filesUnder, mavenClasspath, npmTool, ROOT, run } from './support/tools.js';

// issue 54 item 3: docs/asyncapi.json as the AsyncAPI tools ship. `asyncapi validate`
// (@asyncapi/cli) accepts it; Modelina 5 makes a named TypeScript and Java model of every
// schema (no AnonymousSchema_N, ids as Java long, descriptions as doc comments); tsc and javac
// compile them; every example message of the document round-trips through its model.

// biome-ignore lint/suspicious/noExplicitAny: walking the AsyncAPI document
type Doc = Record<string, any>;
const DOC_PATH = join(ROOT, 'docs/asyncapi.json');
const doc = JSON.parse(readFileSync(DOC_PATH, 'utf8')) as Doc;
// 6.x needs Node 24 (the project's, first on PATH); 448 MB, so installed once per machine under
// .local/generators, not in the project's tree.
const ASYNCAPI_CLI = '@asyncapi/cli@6.2.0';
const JACKSON = '2.17.2';

const pascal = (s: string) => `${s.charAt(0).toUpperCase()}${s.slice(1)}`;
const STATE_MODELS = DEVICE_CATEGORIES.map((c) => `${pascal(c)}StateEvent`);

/** Every example with a value, and the component its message's payload names. */
function examples(): Array<{ model: string; payload: Doc }> {
  const out: Array<{ model: string; payload: Doc }> = [];
  for (const channel of Object.values(doc.channels as Doc)) {
    for (const message of Object.values(channel.messages as Doc)) {
      const ref = (message.payload as Doc).$ref as string;
      const component = ref.replace('#/components/schemas/', '');
      for (const example of (message.examples ?? []) as Doc[]) {
        if (example.payload === null || component === 'DeadLetterValue') continue;
        const model =
          component === 'DeviceStateEvent'
            ? `${pascal(example.payload.category)}StateEvent`
            : component;
        out.push({ model, payload: example.payload });
      }
    }
  }
  return out;
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'asyncapi-models-'));
  // The stack needs only a JRE; these tests compile.
  ensureCommand('javac', 'openjdk-17-jdk-headless');
  ensureCommand('mvn', 'maven');
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('docs/asyncapi.json for the AsyncAPI tools', () => {
  it('is valid for `asyncapi validate` of @asyncapi/cli', () => {
    const cli = npmTool('asyncapi-cli', [ASYNCAPI_CLI]);
    const out = run(
      join(cli, 'node_modules/.bin/asyncapi'),
      ['validate', DOC_PATH, '--fail-severity', 'error'],
      dir,
    );
    expect(out).toMatch(/is valid/);
  });

  it('gives named TypeScript models that compile and round-trip every example', async () => {
    const out = join(dir, 'ts');
    const generator = new TypeScriptFileGenerator({
      modelType: 'class',
      presets: [
        TS_DESCRIPTION_PRESET,
        { preset: TS_COMMON_PRESET, options: { marshalling: true } },
      ],
    });
    const models = await generator.generateToFiles(doc, out, { exportType: 'named' } as never);
    const names = models.map((m) => m.modelName);
    expect(names.filter((n) => /Anonymous/.test(n))).toEqual([]);
    // A model of every object, enum and union component (a lone primitive is inlined).
    const modelled = Object.entries(doc.components.schemas as Doc)
      .filter(([, schema]) => schema.properties || schema.enum || schema.oneOf)
      .map(([id]) => id);
    expect(modelled.length).toBeGreaterThanOrEqual(30);
    expect(names).toEqual(expect.arrayContaining(modelled));
    const battery = readFileSync(join(out, 'BatteryState.ts'), 'utf8');
    expect(battery).toContain('Positive: charging; negative: discharging');
    // CommonJS, so the extensionless imports Modelina writes resolve under Node.
    writeFileSync(join(out, 'package.json'), '{ "type": "commonjs" }\n');
    run(
      'tsc',
      [
        '--strict',
        '--target',
        'es2022',
        '--module',
        'nodenext',
        '--skipLibCheck',
        '--outDir',
        join(out, 'js'),
        ...filesUnder(out, '.ts'),
      ],
      out,
    );
    writeFileSync(join(out, 'js/package.json'), '{ "type": "commonjs" }\n');
    const require = createRequire(join(out, 'js/index.js'));
    const all = examples();
    for (const { model, payload } of all) {
      const Model = require(join(out, 'js', `${model}.js`))[model];
      const back = JSON.parse(Model.unmarshal(payload).marshal());
      expect(back, model).toEqual(payload);
    }
    expect(all.length).toBeGreaterThanOrEqual(18);
    // Every category's state model, by the worked examples (one per category).
    expect(all.map((e) => e.model)).toEqual(expect.arrayContaining(STATE_MODELS));
    console.log(
      `modelina typescript: ${models.length} models, ${all.length} examples round-tripped`,
    );
  });

  it('gives named Java models, ids as long, that javac compiles and that round-trip every example', async () => {
    const out = join(dir, 'java');
    const generator = new JavaFileGenerator({
      presets: [JAVA_JACKSON_PRESET, JAVA_DESCRIPTION_PRESET],
    });
    const models = await generator.generateToFiles(doc, join(out, 'contracts'), {
      packageName: 'contracts',
    });
    const names = models.map((m) => m.modelName);
    expect(names.filter((n) => /Anonymous/.test(n))).toEqual([]);
    const event = readFileSync(join(out, 'contracts/BatteryStateEvent.java'), 'utf8');
    expect(event).toMatch(/private long installationId;/);
    expect(event).toMatch(/private long deviceId;/);
    const installation = readFileSync(join(out, 'contracts/Installation.java'), 'utf8');
    expect(installation).toMatch(/private long id;/);
    expect(installation).toContain('IANA time zone name');
    const classpath = mavenClasspath('jackson', [
      `com.fasterxml.jackson.core:jackson-databind:${JACKSON}`,
      `com.fasterxml.jackson.datatype:jackson-datatype-jsr310:${JACKSON}`,
    ]);
    const classes = join(out, 'classes');
    mkdirSync(classes);
    const sources = [...filesUnder(out, '.java'), join(import.meta.dirname, 'java/RoundTrip.java')];
    run('javac', ['-nowarn', '-cp', classpath, '-d', classes, ...sources], out);
    const input = join(out, 'examples.json');
    expect(examples().map((e) => e.model)).toEqual(expect.arrayContaining(STATE_MODELS));
    writeFileSync(input, JSON.stringify(examples()));
    const result = run('java', ['-cp', `${classes}:${classpath}`, 'RoundTrip', input], out);
    expect(result.trim()).toBe(`${examples().length} round trips`);
    console.log(
      `modelina java: ${models.length} models (${sources.length - 1} files) compiled, ${result.trim()}`,
    );
    void basename;
  });
});
