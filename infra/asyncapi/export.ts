import { writeFileSync } from 'node:fs';
import { asyncApiFileContent } from './asyncapi-document.js';

// Writes docs/asyncapi.json (run: npx tsx infra/asyncapi/export.ts); a unit test keeps it current.
const target = new URL('../../docs/asyncapi.json', import.meta.url);
writeFileSync(target, asyncApiFileContent());
process.stdout.write(`wrote ${target.pathname}\n`);
