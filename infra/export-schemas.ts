// Writes the producer JSON Schemas (docs/schemas/<topic>.schema.json) and the schema registry's
// files (docs/schemas/registry/: Avro, Protobuf and JSON Schema per event type) from the
// consumers' zod schemas. Run: npx tsx infra/export-schemas.ts
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { eventJsonSchemas } from '../src/domain/events.js';
import { REGISTRY_SCHEMA_DIR, registrySchemaFiles } from '../src/registry/schema-files.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'docs', 'schemas');
mkdirSync(outDir, { recursive: true });
for (const [topic, schema] of Object.entries(eventJsonSchemas())) {
  const file = join(outDir, `${topic}.schema.json`);
  writeFileSync(file, `${JSON.stringify(schema, null, 2)}\n`);
  console.log(`wrote ${file}`);
}
for (const { path, text } of registrySchemaFiles()) {
  const file = join(root, REGISTRY_SCHEMA_DIR, path);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}
console.log(`wrote ${registrySchemaFiles().length} files under ${REGISTRY_SCHEMA_DIR}`);
