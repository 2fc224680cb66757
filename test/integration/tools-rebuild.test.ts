import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin, BatchConsumer } from '../../consumers/kafka/client.js';
import { topicSpecs } from '../../consumers/kafka/topics.js';
import { loadConfig } from '../../src/config.js';
import { groupIdOf, TOPIC_ROLES } from '../../src/consumer-groups.js';
import { readEpoch } from '../../src/read-model/epoch.js';
import { createKeys } from '../../src/read-model/keys.js';
import { scanKeys } from '../../src/read-model/redis-connection.js';
import {
  dropPrefix,
  isolatedEnv,
  testKafkaClient,
  testRedis,
  uniqueId,
  waitFor,
} from '../support/stack.js';
import { runOperatorCommand } from './support/operator-command.js';

// The rebuild command against real Kafka and Redis, on a prefix, topics and groups of its own:
// a dry run by default that changes nothing, a refusal while a group has members, --yes
// required without a terminal, and with --execute --yes the model emptied and the groups moved.

const id = uniqueId('rebuild-cli');
const env = { ...isolatedEnv(id), LOG_LEVEL: 'warn' };
const config = loadConfig(env);
const prefix = config.redis.keyPrefix;
const topic = config.topics.installations;
const groups = TOPIC_ROLES.map((role) => ({
  topic: config.topics[role],
  groupId: groupIdOf(config, role),
}));
const installationsGroup = groupIdOf(config, 'installations');
const redis = testRedis();
let admin: Admin;
let member: BatchConsumer | undefined;

const rebuild = (...args: string[]) => runOperatorCommand('rebuild', args, env);

/** Every key under the prefix with its value, and every group's committed offsets. */
async function state(): Promise<unknown> {
  const keys: Record<string, string | null> = {};
  for await (const found of scanKeys(redis, `${prefix}*`))
    for (const key of found) keys[key] = await redis.get(key);
  const offsets = await Promise.all(groups.map((g) => admin.committedOffsets(g.groupId, g.topic)));
  return { keys, offsets };
}

beforeAll(async () => {
  admin = await testKafkaClient().createAdmin();
  await admin.ensureTopics(topicSpecs(config.topics));
  const producer = testKafkaClient().createProducer();
  await producer.connect();
  await producer.send(
    topic,
    ['1', '2', '3'].map((key) => ({ key, value: '{}' })),
  );
  await producer.disconnect();
  // The groups stand at the end of what was produced, as consumers that read it all.
  for (const end of await admin.endOffsets(topic))
    await admin.setCommittedOffset(installationsGroup, topic, end.partition, end.end);
  await redis.set(`${prefix}a`, 'model');
  await redis.set(`${prefix}b`, 'model');
});
afterAll(async () => {
  await member?.stop();
  await dropPrefix(redis, prefix);
  redis.disconnect();
  await admin?.disconnect();
});

describe('the rebuild command', () => {
  it('is a dry run without --execute: prints the plan, changes nothing', async () => {
    const before = await state();
    const run = await rebuild();
    expect(run, run.stderr).toMatchObject({ code: 0 });
    expect(run.stdout.split('\n')).toEqual([
      'rebuild plan (dry run: nothing changed; add --execute to do it):',
      `  delete 2 key(s) under ${JSON.stringify(prefix)}`,
      `  move ${installationsGroup} to the start of ${topic} (3 event(s) to replay)`,
      `  move ${groupIdOf(config, 'access')} to the start of ${config.topics.access} (0 event(s) to replay)`,
      `  move ${groupIdOf(config, 'telemetry')} to the start of ${config.topics.telemetry} (0 event(s) to replay)`,
      '  write a new epoch marker (the API answers 503 until the consumers have caught up)',
      '',
    ]);
    expect(await state()).toEqual(before);
  });

  it('needs --yes when stdin is not a terminal, and then does nothing', async () => {
    const before = await state();
    const run = await rebuild('--execute');
    expect(run).toMatchObject({ code: 2, stdout: '' });
    expect(run.stderr).toContain('add --yes to confirm --execute');
    expect(await state()).toEqual(before);
  });

  it('refuses while a consumer group has members, deleting nothing', async () => {
    member = testKafkaClient().createConsumer({
      groupId: installationsGroup,
      topics: [topic],
      fromBeginning: false,
    });
    await member.start(async () => undefined);
    await waitFor(
      'the member joined',
      async () => ((await admin.describeGroup(installationsGroup)).members > 0 ? true : undefined),
      30_000,
    );
    const before = await state();
    const dry = await rebuild();
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain(
      `--execute would refuse now: ${installationsGroup} has 1 member(s) (Stable)`,
    );
    const run = await rebuild('--execute', '--yes');
    expect(run).toMatchObject({ code: 1 });
    expect(run.stderr).toContain(
      `rebuild: refused, ${installationsGroup} has 1 member(s) (Stable): stop its consumer processes first`,
    );
    expect(run.stdout).not.toContain('read model emptied');
    expect(await state()).toEqual(before);
    await member.stop();
    member = undefined;
  });

  it('with --execute --yes and the groups empty: empties the model, moves the groups', async () => {
    await waitFor(
      'the group empty',
      async () =>
        (await admin.describeGroup(installationsGroup)).members === 0 ? true : undefined,
      30_000,
    );
    const run = await rebuild('--execute', '--yes');
    expect(run, run.stderr).toMatchObject({ code: 0 });
    expect(run.stdout).toContain('read model emptied (2 keys) and groups moved to the start');
    // One key per call: on a Redis Cluster the two live in different slots.
    for (const key of [`${prefix}a`, `${prefix}b`]) expect(await redis.exists(key), key).toBe(0);
    expect(await readEpoch(redis, createKeys(prefix))).toMatchObject({ complete: false });
    const offsets = await admin.committedOffsets(installationsGroup, topic);
    expect(offsets.every((o) => o.offset === null || o.offset === '0')).toBe(true);
  });
});
