import type { Config } from '../../src/config.js';
import {
  encodeEvent,
  REGISTRY_FORMATS,
  type RegistryFormat,
  schemaEntryOf,
} from '../../src/registry/event-encoder.js';
import { createRegistryAdmin, subjectOf } from '../../src/registry/registry-admin.js';
import { registrySchemaFiles, SCHEMA_TYPES } from '../../src/registry/schema-files.js';

// The simulator's value formats: JSON, or the service's own schemas in a registry format,
// framed with the ids the registry holds for them (registered by tools/register-schemas.ts).

export const VALUE_FORMATS = ['json', ...REGISTRY_FORMATS] as const;
export type ValueFormat = (typeof VALUE_FORMATS)[number];

export type ValueEncoder = (event: object) => string | Buffer;

export async function createValueEncoder(
  format: ValueFormat,
  registryUrl: string | null,
  topics: Pick<Config['topics'], 'installations' | 'telemetry'>,
): Promise<ValueEncoder> {
  if (format === 'json') return (event) => JSON.stringify(event);
  if (registryUrl === null) throw new Error(`--format ${format} needs SCHEMA_REGISTRY_URL`);
  const ids = await schemaIds(format, registryUrl, topics);
  return (event) => {
    const e = event as Record<string, unknown>;
    return encodeEvent(e, format, ids.get(schemaEntryOf(e).name) as number);
  };
}

async function schemaIds(
  format: RegistryFormat,
  url: string,
  topics: Pick<Config['topics'], 'installations' | 'telemetry'>,
): Promise<Map<string, number>> {
  const admin = createRegistryAdmin(url);
  const ids = new Map<string, number>();
  for (const file of registrySchemaFiles().filter((f) => f.format === format)) {
    const subject = subjectOf(file.entry, topics);
    const id = await admin.lookup(subject, SCHEMA_TYPES[format], file.text);
    if (id === null) {
      throw new Error(
        `${subject} holds no such ${format} schema: run npx tsx tools/register-schemas.ts --format ${format}`,
      );
    }
    ids.set(file.entry.name, id);
  }
  return ids;
}
