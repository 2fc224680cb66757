import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { asyncApiFileContent } from './asyncapi-document.js';
import { majorOf } from './breaking-changes.js';

// Writes docs/asyncapi.json (run: npx tsx infra/asyncapi/export.ts); a unit test keeps it current.
// docs/asyncapi-baseline.json is the first document of the current major version, what a change
// must not break (test/unit/asyncapi-diff.test.ts): written here only when it is missing or of
// another major version, so bumping the major is the one way to start a new baseline.
const content = asyncApiFileContent();
const target = new URL('../../docs/asyncapi.json', import.meta.url);
writeFileSync(target, content);
process.stdout.write(`wrote ${target.pathname}\n`);

const baseline = new URL('../../docs/asyncapi-baseline.json', import.meta.url);
const major = majorOf(JSON.parse(content));
if (!existsSync(baseline) || majorOf(JSON.parse(readFileSync(baseline, 'utf8'))) !== major) {
  writeFileSync(baseline, content);
  process.stdout.write(`wrote ${baseline.pathname}: the baseline of major version ${major}\n`);
}
