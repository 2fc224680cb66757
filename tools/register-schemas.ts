import { z } from 'zod';
import { loadConfig } from '../src/config.js';
import { REGISTRY_FORMATS } from '../src/registry/event-encoder.js';
import { createRegistryAdmin, registerAll } from '../src/registry/registry-admin.js';
import { registrySchemaFiles } from '../src/registry/schema-files.js';
import { runCommand, UsageError, usageText } from './cli.js';

// Registers the service's own schemas (docs/schemas/registry/) in the schema registry, one
// subject per event type on the configured topic names (TopicRecordNameStrategy:
// `<topic>-readmodel.v1.<Record>`), each with the compatibility rule BACKWARD, so a change that
// would stop a consumer reading older events is refused. Idempotent: a schema already
// registered keeps its id. Prints `<subject>\t<id>` per schema.

const USAGE = usageText({
  name: 'register-schemas',
  synopsis: '[--format avro|protobuf|json-schema]',
  about:
    "Registers the service's schemas, one subject per event type with compatibility BACKWARD;\n" +
    'idempotent. Prints each subject and its id.',
  options: `  --format F              the format producers on these topics write (default avro); one
                          format per subject, so one per deployment of the topics`,
  environment:
    'The registry is SCHEMA_REGISTRY_URL (its Confluent-compatible API, e.g.\n' +
    'http://127.0.0.1:18081/apis/ccompat/v7); topic names come from TOPIC_*, as for the service.',
});

const spec = {
  name: 'register-schemas',
  usage: USAGE,
  options: { format: { type: 'string' } },
  schema: z.object({ format: z.enum(REGISTRY_FORMATS).default('avro') }),
} as const;

runCommand(spec, async (args) => {
  const config = loadConfig();
  const url = config.schemaRegistry.url;
  if (url === null) throw new UsageError('SCHEMA_REGISTRY_URL is not set');
  const ids = await registerAll(
    createRegistryAdmin(url),
    registrySchemaFiles(),
    args.format,
    config.topics,
  );
  for (const { subject, id } of ids.values()) process.stdout.write(`${subject}\t${id}\n`);
});
