import { z } from 'zod';
import { createKafkajsClient } from '../consumers/kafka/kafkajs-client.js';
import { loadConfig } from '../src/config.js';
import {
  installationListSchema,
  keyGrantEvents,
  ownerSchema,
  toAccessMessages,
} from './access/access-grants.js';
import { issueKey } from './access/api-key.js';
import { createCliLogger, runCommand, usageText } from './cli.js';

// Issues an API key: publishes the key's SHA-256 hash, the grants, (user owner) the memberships
// and, with --upsert-application, the application to the access topic, then prints the key once
// on stdout. The key itself is never published, stored or logged.

const USAGE = usageText({
  name: 'issue-key',
  synopsis:
    '--application ID --owner user:ID|company:ID --installations LIST\n' +
    '         [--upsert-application] [--expires-in-days D] [--json]',
  about:
    "Publishes a new key's hash, its grants and (user owner) the memberships to the access topic,\n" +
    'then prints the key once. stdout carries only the key (its last line), or the JSON object;\n' +
    'everything else goes to stderr.',
  options: `  --application ID        application the key belongs to
  --owner user:5          its owner; a user owner also gets a membership of each installation
  --upsert-application    also publish the application with this owner, enabled (creates it;
                          re-enables it if it was disabled); without it the application must
                          exist already
  --installations LIST    installations to grant, e.g. 1,2,3 or 1-50 or 1-5,9
  --expires-in-days D     key expiry (default: never)
  --json                  print {"applicationId","keyId","apiKey","expiresAt","installations"}`,
});

const DAY_MS = 86_400_000;

const argsSchema = z.object({
  application: z.coerce.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  owner: ownerSchema,
  installations: installationListSchema,
  'expires-in-days': z.coerce.number().positive().max(36_500).optional(),
  'upsert-application': z.boolean().default(false),
  json: z.boolean().default(false),
});

const spec = {
  name: 'issue-key',
  usage: USAGE,
  options: {
    application: { type: 'string' },
    owner: { type: 'string' },
    installations: { type: 'string' },
    'expires-in-days': { type: 'string' },
    'upsert-application': { type: 'boolean' },
    json: { type: 'boolean' },
  },
  schema: argsSchema,
} as const;

runCommand(spec, async (args) => {
  const config = loadConfig();
  const logger = createCliLogger({ level: config.logLevel, name: 'issue-key' });
  const nowMs = Date.now();
  const days = args['expires-in-days'];
  const expiresAtMs = days === undefined ? null : nowMs + Math.round(days * DAY_MS);
  const { keyId, apiKey, keyHash } = issueKey();
  const events = keyGrantEvents({
    applicationId: args.application,
    owner: args.owner,
    installations: args.installations,
    keyId,
    keyHash,
    expiresAtMs,
    nowMs,
    upsertApplication: args['upsert-application'],
  });

  const producer = createKafkajsClient({
    brokers: config.kafka.brokers,
    clientId: `${config.kafka.clientId}-issue-key`,
    logger,
  }).createProducer();
  await producer.connect();
  try {
    await producer.send(config.topics.access, toAccessMessages(events));
  } finally {
    await producer.disconnect();
  }

  const expiresAt = expiresAtMs === null ? null : new Date(expiresAtMs).toISOString();
  process.stderr.write(
    `issued ${keyId} for application ${args.application} (owner ${args.owner.type}:${args.owner.id}), ` +
      `${args.installations.length} installation(s), expires ${expiresAt ?? 'never'}; ` +
      `published ${events.length} events to ${config.topics.access}. ` +
      'This tool keeps no copy of the key (only its hash is published); it is printed once, on stdout:\n',
  );
  const out = args.json
    ? JSON.stringify({
        applicationId: args.application,
        keyId,
        apiKey,
        expiresAt,
        installations: args.installations,
      })
    : apiKey;
  process.stdout.write(`${out}\n`);
});
