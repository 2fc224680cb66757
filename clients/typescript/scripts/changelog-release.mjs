// Turns the changelog's "## Unreleased" section into the entry of a release, dated, and opens
// an empty "## Unreleased" above it. Refuses (exit 1, file untouched) a version already in the
// changelog and an Unreleased section that says nothing: a release says what changed.
//   node scripts/changelog-release.mjs <CHANGELOG.md> <version> <YYYY-MM-DD>
import { readFileSync, writeFileSync } from 'node:fs';

const EMPTY = '_Nothing yet._';
const [file, version, date] = process.argv.slice(2);
if (!file || !version || !/^\d{4}-\d{2}-\d{2}$/.test(date ?? '')) {
  console.error('usage: node changelog-release.mjs <CHANGELOG.md> <version> <YYYY-MM-DD>');
  process.exit(2);
}

const fail = (message) => {
  console.error(`changelog: ${message}`);
  process.exit(1);
};

const text = readFileSync(file, 'utf8');
const headings = [...text.matchAll(/^## (.+)$/gm)];
const unreleased = headings.findIndex((h) => h[1].trim() === 'Unreleased');
if (unreleased < 0) fail(`${file} has no "## Unreleased" section`);
if (headings.some((h) => h[1].split(' ')[0] === version)) fail(`${version} is already released`);

const start = headings[unreleased].index;
const bodyStart = start + headings[unreleased][0].length;
const end = headings[unreleased + 1]?.index ?? text.length;
const body = text.slice(bodyStart, end).trim();
if (body === '' || body === EMPTY) fail('the Unreleased section says nothing: write what changed');

const entry = `## Unreleased\n\n${EMPTY}\n\n## ${version} - ${date}\n\n${body}\n\n`;
writeFileSync(file, `${(text.slice(0, start) + entry + text.slice(end)).trimEnd()}\n`);
console.log(`changelog: ${version} - ${date} written`);
