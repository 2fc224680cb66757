import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type Consumer, Kafka, logLevel } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin } from '../../consumers/kafka/client.js';
import { parseAccessMessage } from '../../src/domain/event-parse.js';
import type { AccessEvent } from '../../src/domain/events.js';
import { kafkaBrokers, testKafkaClient, uniqueId, waitFor } from '../support/stack.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// The issue-key command as a user runs it: the key on stdout, only its hash on the topic.
describe('issue-key -> real access topic', () => {
  const topic = uniqueId('issue-key-access');
  const received: { key: string; value: string }[] = [];
  let admin: Admin;
  let consumer: Consumer;

  beforeAll(async () => {
    admin = await testKafkaClient().createAdmin();
    await admin.ensureTopics([{ topic, numPartitions: 3, cleanupPolicy: 'compact' }]);
    consumer = new Kafka({ brokers: kafkaBrokers(), logLevel: logLevel.NOTHING }).consumer({
      groupId: uniqueId('issue-key-reader'),
    });
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ message }) => {
        received.push({
          key: message.key?.toString() ?? '',
          value: message.value?.toString() ?? '',
        });
      },
    });
  });

  afterAll(async () => {
    await consumer?.disconnect();
    await admin?.disconnect();
  });

  it('prints the key once and publishes app, memberships, grants and the hash', async () => {
    const { stdout, stderr } = await run(
      'npx',
      [
        'tsx',
        'tools/issue-key.ts',
        '--application',
        '17',
        '--owner',
        'user:5',
        '--installations',
        '41-42,44',
        '--expires-in-days',
        '30',
        '--upsert-application',
      ],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          KAFKA_BROKERS: kafkaBrokers().join(','),
          TOPIC_ACCESS: topic,
          LOG_LEVEL: 'warn',
        },
      },
    );
    const lines = stdout.trim().split('\n');
    expect(lines).toHaveLength(1);
    const apiKey = lines[0] ?? '';
    expect(apiKey).toMatch(/^itk_[A-Za-z0-9]{40}$/);
    expect(stderr).not.toContain(apiKey);

    await waitFor('the access events', async () => (received.length >= 8 ? true : undefined));
    const events: AccessEvent[] = received.map((m) => {
      expect(m.value).not.toContain(apiKey.slice(4));
      const parsed = parseAccessMessage(m.value, m.key);
      if (!parsed.ok) throw new Error(`${parsed.reason}: ${parsed.detail}`);
      return parsed.event;
    });
    const created = events.find((e) => e.type === 'apiKey.created');
    if (created?.type !== 'apiKey.created') throw new Error('no apiKey.created');
    expect(created.keyHash).toBe(createHash('sha256').update(apiKey).digest('hex'));
    expect(created.applicationId).toBe(17);
    expect(Date.parse(created.expiresAt ?? '') - Date.now()).toBeGreaterThan(29 * 86_400_000);
    expect(received.map((m) => m.key).sort()).toEqual(
      [
        'app:17',
        'grant:17:41',
        'grant:17:42',
        'grant:17:44',
        `key:${created.keyId}`,
        'member:5:41',
        'member:5:42',
        'member:5:44',
      ].sort(),
    );
    expect(events.find((e) => e.type === 'application.upserted')).toMatchObject({
      owner: { type: 'user', id: 5 },
      enabled: true,
    });
  });

  it('refuses bad arguments with the usage and exit code 2, publishing nothing', async () => {
    const before = received.length;
    const failed = await run(
      'npx',
      [
        'tsx',
        'tools/issue-key.ts',
        '--application',
        '17',
        '--owner',
        'team:1',
        '--installations',
        '1',
      ],
      {
        cwd: ROOT,
        env: { ...process.env, KAFKA_BROKERS: kafkaBrokers().join(','), TOPIC_ACCESS: topic },
      },
    ).then(
      () => null,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
    expect(failed?.code).toBe(2);
    expect(failed?.stdout).toBe('');
    expect(failed?.stderr).toContain('--owner');
    expect(failed?.stderr).toContain('usage:');
    expect(received.length).toBe(before);
  });
});
