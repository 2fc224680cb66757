// Writes the producer JSON Schemas (docs/schemas/<topic>.schema.json) from the consumers' zod
// schemas. Run: npx tsx infra/export-schemas.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventJsonSchemas } from '../src/domain/events.js';

const outDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'schemas');
mkdirSync(outDir, { recursive: true });
for (const [topic, schema] of Object.entries(eventJsonSchemas())) {
  const file = join(outDir, `${topic}.schema.json`);
  writeFileSync(file, `${JSON.stringify(schema, null, 2)}\n`);
  console.log(`wrote ${file}`);
}
