import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildAsyncApiDocument } from '../../infra/asyncapi/asyncapi-document.js';
import {
  breakingChanges,
  inlineSchemaRefs,
  majorOf,
} from '../../infra/asyncapi/breaking-changes.js';
import { loadConfig } from '../../src/config.js';

// A breaking change of the topic contract (@asyncapi/diff's judgement, infra/asyncapi/
// breaking-changes.ts) fails unless the document's major version was bumped. The base is the
// committed baseline, the first document of the current major version: infra/asyncapi/export.ts
// writes it only when the major changes, so regenerating and committing a breaking change
// without the bump still fails, in any checkout (no git history needed).

// biome-ignore lint/suspicious/noExplicitAny: walking a JSON document the tests also check by schema
type Doc = Record<string, any>;
const BASELINE = 'docs/asyncapi-baseline.json';
const baseline = JSON.parse(
  readFileSync(new URL(`../../${BASELINE}`, import.meta.url), 'utf8'),
) as Doc;
const generated = buildAsyncApiDocument(loadConfig({})) as Doc;

// Mutated where a producer meets it: in the payloads, components inlined.
const copy = (doc: Doc): Doc => inlineSchemaRefs(structuredClone(doc));

describe('AsyncAPI breaking changes', () => {
  it('none against the baseline of this major version', () => {
    expect(
      majorOf(baseline),
      `${BASELINE} is of another major version: npx tsx infra/asyncapi/export.ts writes the new one's`,
    ).toBe(majorOf(generated));
    const changes = breakingChanges(baseline, generated).map((c) => `${c.action} ${c.path}`);
    expect(
      changes,
      `breaking against ${BASELINE}: bump ASYNCAPI_VERSION's major (infra/asyncapi/asyncapi-document.ts) and regenerate`,
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
    const smaller = copy(generated);
    smaller.channels.deviceTelemetry.messages.deviceState['x-max-value-bytes'] = 1024;
    for (const changed of [removed, narrowed, renamed, required, smaller])
      expect(breakingChanges(generated, changed)).toHaveLength(1);
  });

  it('lets a new optional field, a new channel, a new description or example through', () => {
    const widened = copy(generated);
    widened.channels.deviceTelemetry.messages.deviceRemoved.payload.properties.note = {
      type: 'string',
    };
    widened.channels.deviceTelemetry.messages.deviceRemoved.summary = 'changed words';
    widened.channels.extra = { address: 'extra.v1', messages: {} };
    widened.channels.deviceTelemetry.messages.deviceState.examples[0].payload.state = { soe: 1 };
    widened.channels.deviceTelemetry.messages.deviceState.examples.pop();
    expect(breakingChanges(generated, widened)).toEqual([]);
  });
});
