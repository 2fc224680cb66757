import { writeFileSync } from 'node:fs';
import { DEFAULT_BASE_PATH, openApiFileContent } from './openapi-file.js';

// Writes docs/openapi.json (run: npx tsx api/openapi/export.ts); a unit test keeps it current.
const target = new URL('../../docs/openapi.json', import.meta.url);
writeFileSync(target, openApiFileContent(DEFAULT_BASE_PATH));
process.stdout.write(`wrote ${target.pathname}\n`);
