import { EVENT_SCHEMAS, subjectName } from '../../src/registry/event-schemas.js';
import { REGISTRY_SCHEMA_DIR, registrySchemaFiles } from '../../src/registry/schema-files.js';

// What the AsyncAPI document says of a message that may also come registry-framed: the Kafka
// binding's schema-id fields (Confluent framing, one subject per record) and, per format, the
// schema file and its subject under `x-registry-schemas` (a message has one payload, the JSON
// Schema; these are its other forms). docs/events.md, Schema registry, says how they decode.

const SCHEMA_FORMATS = {
  avro: 'application/vnd.apache.avro+json;version=1.9.0',
  protobuf: 'application/vnd.google.protobuf;version=3',
  'json-schema': 'application/schema+json;version=draft-2020-12',
} as const;

/** The Kafka message binding's schema-id fields, for a message with registry schemas. */
export function registryBinding(records: readonly string[] | undefined): Record<string, string> {
  if (!records?.length) return {};
  return {
    schemaIdLocation: 'payload',
    schemaIdPayloadEncoding: 'confluent',
    schemaLookupStrategy: 'TopicRecordNameStrategy',
  };
}

/** `x-registry-schemas`: each record's schema in each format, with its subject and file. */
export function registrySchemas(records: readonly string[] | undefined): Record<string, unknown> {
  if (!records?.length) return {};
  const files = registrySchemaFiles();
  const list = records.flatMap((name) => {
    const entry = EVENT_SCHEMAS.find((e) => e.name === name);
    if (!entry) throw new Error(`no registry schema ${name}`);
    return files
      .filter((f) => f.entry === entry)
      .map((f) => ({
        schemaFormat: SCHEMA_FORMATS[f.format],
        subject: subjectName(entry.topic, entry),
        file: `${REGISTRY_SCHEMA_DIR}/${f.path}`,
      }));
  });
  return { 'x-registry-schemas': list };
}
