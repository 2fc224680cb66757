import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildAsyncApiDocument } from '../../infra/asyncapi/asyncapi-document.js';
import { breakingChanges, majorOf } from '../../infra/asyncapi/breaking-changes.js';
import { loadConfig } from '../../src/config.js';

// A breaking change of the topic contract (@asyncapi/diff's judgement, infra/asyncapi/
// breaking-changes.ts) fails unless the document's major version was bumped. The base is the
// first committed document of the current major version, so regenerating and committing a
// breaking change without the bump still fails; outside git, the committed file is the base.

// biome-ignore lint/suspicious/noExplicitAny: walking a JSON document the tests also check by schema
type Doc = Record<string, any>;
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FILE = 'docs/asyncapi.json';
const generated = buildAsyncApiDocument(loadConfig({})) as Doc;

function git(args: string[]): string | null {
  try {
    return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
  } catch {
    return null;
  }
}

/** The first committed document of this major version, else the file as it is. */
function baseDocument(major: number): { doc: Doc; from: string } {
  const commits = git(['log', '--reverse', '--format=%H', '--', FILE])?.split('\n') ?? [];
  for (const commit of commits.filter(Boolean)) {
    const text = git(['show', `${commit}:${FILE}`]);
    if (text === null) continue;
    const doc = JSON.parse(text) as Doc;
    if (majorOf(doc) === major) return { doc, from: `${FILE} at ${commit.slice(0, 10)}` };
  }
  return { doc: JSON.parse(readFileSync(`${ROOT}/${FILE}`, 'utf8')), from: FILE };
}

const copy = (doc: Doc): Doc => structuredClone(doc);

describe('AsyncAPI breaking changes', () => {
  it('none since the first document of this major version', () => {
    const { doc: base, from } = baseDocument(majorOf(generated));
    const changes = breakingChanges(base, generated).map((c) => `${c.action} ${c.path}`);
    expect(
      changes,
      `breaking against ${from}: bump ASYNCAPI_VERSION's major (infra/asyncapi/asyncapi-document.ts) and regenerate`,
    ).toEqual([]);
  });

  it('calls a removed field, a narrowed type and a renamed topic breaking', () => {
    const removed = copy(generated);
    delete removed.channels.deviceTelemetry.messages.deviceRemoved.payload.properties.deviceId;
    const narrowed = copy(generated);
    narrowed.channels.installations.messages.installationDeleted.payload.properties.installationId.maximum = 7;
    const renamed = copy(generated);
    renamed.channels.accessChanges.address = 'access-changes.v2';
    const required = copy(generated);
    required.channels.accessChanges.messages.apiKeyRevoked.payload.required.push('reason');
    for (const changed of [removed, narrowed, renamed, required])
      expect(breakingChanges(generated, changed)).toHaveLength(1);
  });

  it('lets a new optional field, a new channel or a new description through', () => {
    const widened = copy(generated);
    widened.channels.deviceTelemetry.messages.deviceRemoved.payload.properties.note = {
      type: 'string',
    };
    widened.channels.deviceTelemetry.messages.deviceRemoved.summary = 'changed words';
    widened.channels.extra = { address: 'extra.v1', messages: {} };
    expect(breakingChanges(generated, widened)).toEqual([]);
  });
});
