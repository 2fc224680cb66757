import { z } from 'zod';
import { createKafkajsClient } from '../consumers/kafka/kafkajs-client.js';
import { loadConfig } from '../src/config.js';
import { createCliLogger, runCommand, usageText } from './cli.js';
import { createProgressReporter } from './progress.js';
import { createValueEncoder, VALUE_FORMATS } from './sim/registry-format.js';
import { runSimulator } from './simulation-runner.js';

// Produces realistic installations and device telemetry to the configured topics.

const USAGE = usageText({
  name: 'simulator',
  synopsis:
    '--installations N --rate EVENTS_PER_SEC\n' +
    '         [--duration SECONDS] [--seed S] [--offline-fraction F]\n' +
    '         [--format json|avro|protobuf|json-schema]',
  about:
    'Produces realistic installations (upserted first) and device telemetry to the topics, until\n' +
    '--duration or Ctrl-C; progress on stderr.',
  options: `  --installations N       installations 1..N, upserted first
  --rate R                device.state events per second, across all installations
  --duration SECONDS      stop after this long (default: run until Ctrl-C)
  --seed S                seed of the generated fleet and telemetry (default 1)
  --offline-fraction F    fraction 0..1 of devices that stop reporting (default 0.05)
  --format F              value format (default json); the others are framed for the schema
                          registry at SCHEMA_REGISTRY_URL, whose schemas tools/register-schemas.ts
                          registered`,
});

const argsSchema = z.object({
  installations: z.coerce.number().int().positive().max(1_000_000),
  rate: z.coerce.number().positive().max(1_000_000),
  duration: z.coerce.number().positive().optional(),
  seed: z.coerce.number().int().min(0).max(0xffffffff).default(1),
  'offline-fraction': z.coerce.number().min(0).max(1).default(0.05),
  format: z.enum(VALUE_FORMATS).default('json'),
});

const spec = {
  name: 'simulator',
  usage: USAGE,
  options: {
    installations: { type: 'string' },
    rate: { type: 'string' },
    duration: { type: 'string' },
    seed: { type: 'string' },
    'offline-fraction': { type: 'string' },
    format: { type: 'string' },
  },
  schema: argsSchema,
} as const;

runCommand(spec, async (args) => {
  const config = loadConfig();
  const logger = createCliLogger({ level: config.logLevel, name: 'simulator' });
  const producer = createKafkajsClient({
    brokers: config.kafka.brokers,
    clientId: `${config.kafka.clientId}-simulator`,
    logger,
  }).createProducer();

  const encodeValue = await createValueEncoder(
    args.format,
    config.schemaRegistry.url,
    config.topics,
  );
  const stop = new AbortController();
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => stop.abort());

  await producer.connect();
  const progress = createProgressReporter(process.stderr);
  try {
    const result = await runSimulator(
      {
        producer,
        topics: config.topics,
        signal: stop.signal,
        onProgress: progress.update,
        encodeValue,
      },
      {
        installations: args.installations,
        eventsPerSecond: args.rate,
        durationSeconds: args.duration ?? null,
        seed: args.seed,
        offlineFraction: args['offline-fraction'],
      },
    );
    progress.done(result);
  } finally {
    await producer.disconnect();
  }
});
