import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin, Producer } from '../../consumers/kafka/client.js';
import { replayLogTopic } from '../../src/domain/dead-letter.js';
import { kafkaBrokers, testKafkaClient, uniqueId } from '../support/stack.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// The dead-letter command as an operator runs it, on a dead-letter topic of its own: filters,
// counts by reason, secrets masked, and replay a dry run unless told otherwise.

const id = uniqueId('dlq-cli');
const dlq = `${id}-deadletter`;
const topics = { access: `${id}-access`, telemetry: `${id}-telemetry` };
const apiKey = `itk_${'A1b2C3d4'.repeat(5)}`;
const keyHash = 'ab'.repeat(32);
let admin: Admin;
let producer: Producer;

const headers = (topic: string, offset: number, reason: string, detail: string) => ({
  'x-source-topic': topic,
  'x-source-partition': '0',
  'x-source-offset': String(offset),
  'x-reason': reason,
  'x-detail': detail,
});

async function tool(...args: string[]): Promise<string[]> {
  const { stdout } = await run('npx', ['tsx', 'tools/dead-letters.ts', ...args], {
    cwd: ROOT,
    env: {
      ...process.env,
      KAFKA_BROKERS: kafkaBrokers().join(','),
      TOPIC_DEADLETTER: dlq,
      TOPIC_ACCESS: topics.access,
      TOPIC_TELEMETRY: topics.telemetry,
      LOG_LEVEL: 'warn',
    },
  });
  return stdout.trim().split('\n');
}
const json = (lines: string[]) => lines.map((l) => JSON.parse(l));

beforeAll(async () => {
  admin = await testKafkaClient().createAdmin();
  await admin.ensureTopics([{ topic: dlq, numPartitions: 1, cleanupPolicy: 'delete' }]);
  producer = testKafkaClient().createProducer();
  await producer.connect();
  await producer.send(dlq, [
    {
      key: 'key:k1',
      value: JSON.stringify({
        type: 'apiKey.created',
        keyId: 'k1',
        applicationId: 17,
        keyHash,
        note: `oops ${apiKey}`,
      }),
      headers: headers(topics.access, 3, 'invalid_key', `expected key:k2 near ${apiKey}`),
    },
    {
      key: '42',
      value: JSON.stringify({ type: 'device.state', installationId: 42, state: { soe: 'x' } }),
      // The producer's own headers, as the consumers forward them beside their x-* ones.
      headers: {
        ...headers(topics.telemetry, 8, 'schema_violation', 'state.soe: expected number'),
        traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
        'x-gateway': `gw-7 ${apiKey}`,
        'x-api-key': 'anything',
      },
    },
    {
      key: 'grant:17:42',
      value: '{not json',
      headers: headers(topics.access, 9, 'invalid_json', 'value is not valid JSON (9 bytes)'),
    },
  ]);
});
afterAll(async () => {
  await producer?.disconnect();
  await admin?.disconnect();
});

describe('dead-letters command', () => {
  it('lists with counts by reason and never prints a key or its hash', async () => {
    const lines = await tool('list');
    expect(lines).toHaveLength(3 + 1 + 3);
    expect(lines[0]).toMatch(new RegExp(`^${dlq}:0:0  \\S+  invalid_key  ${topics.access}:0:3`));
    expect(lines.slice(3)).toEqual([
      `3 dead letter(s) on ${dlq}`,
      '  invalid_key: 1',
      '  schema_violation: 1',
      '  invalid_json: 1',
    ]);
    const shown = (await tool('show', '--id', `${dlq}:0:0`)).join('\n');
    expect(shown).toContain('"keyHash": "[redacted]"');
    expect(shown).toContain('"applicationId": 17');
    for (const out of [lines.join('\n'), shown]) {
      expect(out).not.toContain(apiKey);
      expect(out).not.toContain(keyHash);
    }
  });

  it('filters by source topic, reason, key, installation and time', async () => {
    const ids = async (...filters: string[]) =>
      json(await tool('list', '--json', ...filters))
        .filter((o) => o.id)
        .map((o) => o.id as string);
    expect(await ids('--topic', topics.access)).toEqual([`${dlq}:0:0`, `${dlq}:0:2`]);
    expect(await ids('--reason', 'schema_violation')).toEqual([`${dlq}:0:1`]);
    expect(await ids('--key', 'key:k1')).toEqual([`${dlq}:0:0`]);
    expect(await ids('--installation', '42')).toEqual([`${dlq}:0:1`, `${dlq}:0:2`]);
    const soon = new Date(Date.now() + 3_600_000).toISOString();
    expect(await ids('--since', soon)).toEqual([]);
    expect(await ids('--until', soon, '--reason', 'invalid_json')).toEqual([`${dlq}:0:2`]);
  });

  it("shows the producer's headers, as text, secrets masked", async () => {
    const [shown] = json(await tool('show', '--json', '--id', `${dlq}:0:1`));
    expect(shown.headers).toEqual({
      traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
      'x-gateway': 'gw-7 [redacted]',
      'x-api-key': '[redacted]',
    });
    const text = (await tool('show', '--id', `${dlq}:0:1`)).join('\n');
    expect(text).toContain('"traceparent": "00-0af7651916cd43dd8448eb211c80319c');
    expect(text).not.toContain(apiKey);
  });

  it('replays only as a dry run without --execute, writing nothing', async () => {
    const lines = await tool('replay', '--reason', 'schema_violation');
    expect(lines).toEqual([
      `would send ${dlq}:0:1 -> ${topics.telemetry} (partition by key) (replay 1)`,
      'dry run: 1 to send, 0 skipped; add --execute to send',
    ]);
    const ends = await admin.endOffsets(dlq);
    expect(ends[0]?.end).toBe('3');
    const probe = new Kafka({ brokers: kafkaBrokers(), logLevel: logLevel.NOTHING }).admin();
    await probe.connect();
    try {
      expect(await probe.listTopics()).not.toContain(replayLogTopic(dlq));
    } finally {
      await probe.disconnect();
    }
  });

  it('asks for --yes to --execute without a terminal, sending nothing', async () => {
    const refused = await tool('replay', '--reason', 'schema_violation', '--execute').catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(refused).toMatchObject({ code: 2 });
    expect((refused as { stderr: string }).stderr).toContain('add --yes to confirm --execute');
    const probe = new Kafka({ brokers: kafkaBrokers(), logLevel: logLevel.NOTHING }).admin();
    await probe.connect();
    try {
      const existing = await probe.listTopics();
      expect(existing).not.toContain(replayLogTopic(dlq));
      expect(existing).not.toContain(topics.telemetry);
    } finally {
      await probe.disconnect();
    }
  });
});
