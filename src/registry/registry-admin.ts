import type { RegistryFormat } from './event-encoder.js';
import { type EventSchemaEntry, subjectName } from './event-schemas.js';
import { SCHEMA_TYPES, type SchemaFile } from './schema-files.js';

// Writing to a Confluent-compatible registry: the compatibility rule of a subject, a schema
// registered under it, the id of a schema already there. For the registration tool, the
// simulator and the tests; the consumers only read (registry-client.ts).

const JSON_TYPE = 'application/vnd.schemaregistry.v1+json';

export class RegistryRequestError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

async function call(url: string, method: string, body?: unknown): Promise<unknown> {
  const response = await fetch(url, {
    method,
    headers: { 'content-type': JSON_TYPE, accept: JSON_TYPE },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await response.text();
  if (!response.ok) {
    throw new RegistryRequestError(
      `${method} ${new URL(url).pathname}: ${response.status} ${text.slice(0, 300)}`,
      response.status,
    );
  }
  return text === '' ? null : JSON.parse(text);
}

export interface RegistryAdmin {
  setCompatibility(subject: string, level: 'BACKWARD'): Promise<void>;
  /** Registers the schema (idempotent: the same schema again answers its id). */
  register(subject: string, schemaType: string, schema: string): Promise<number>;
  /** The id of this schema under the subject, or null when it is not registered there. */
  lookup(subject: string, schemaType: string, schema: string): Promise<number | null>;
}

export function createRegistryAdmin(baseUrl: string): RegistryAdmin {
  const base = baseUrl.replace(/\/+$/, '');
  const subjectUrl = (subject: string) => `${base}/subjects/${encodeURIComponent(subject)}`;
  return {
    async setCompatibility(subject, level) {
      await call(`${base}/config/${encodeURIComponent(subject)}`, 'PUT', { compatibility: level });
    },
    async register(subject, schemaType, schema) {
      const answer = (await call(`${subjectUrl(subject)}/versions`, 'POST', {
        schemaType,
        schema,
      })) as { id: number };
      return answer.id;
    },
    async lookup(subject, schemaType, schema) {
      try {
        const answer = (await call(subjectUrl(subject), 'POST', { schemaType, schema })) as {
          id: number;
        };
        return answer.id;
      } catch (error) {
        if (error instanceof RegistryRequestError && error.status === 404) return null;
        throw error;
      }
    },
  };
}

/** The subject of a schema file on the configured topic names. */
export function subjectOf(
  entry: EventSchemaEntry,
  topics: { readonly installations: string; readonly telemetry: string },
): string {
  return subjectName(
    entry.topic === 'installations.v1' ? topics.installations : topics.telemetry,
    entry,
  );
}

/** Every file of one format registered under its subject with BACKWARD; their ids by record. */
export async function registerAll(
  admin: RegistryAdmin,
  files: readonly SchemaFile[],
  format: RegistryFormat,
  topics: { readonly installations: string; readonly telemetry: string },
): Promise<Map<string, { subject: string; id: number }>> {
  const ids = new Map<string, { subject: string; id: number }>();
  for (const file of files.filter((f) => f.format === format)) {
    const subject = subjectOf(file.entry, topics);
    await admin.setCompatibility(subject, 'BACKWARD');
    const id = await admin.register(subject, SCHEMA_TYPES[format], file.text);
    ids.set(file.entry.name, { subject, id });
  }
  return ids;
}
