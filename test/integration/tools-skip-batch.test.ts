import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Admin, BatchConsumer } from '../../consumers/kafka/client.js';
import { topicSpecs } from '../../consumers/kafka/topics.js';
import { loadConfig } from '../../src/config.js';
import { groupIdOf } from '../../src/consumer-groups.js';
import { isolatedEnv, testKafkaClient, uniqueId, waitFor } from '../support/stack.js';
import { runOperatorCommand } from './support/operator-command.js';

// The skip-batch command against real Kafka, on topics and a group of its own: a dry run by
// default that records and moves nothing, a refusal while the group has members, and with
// --execute --yes the skip recorded on the dead-letter topic and the group moved.

const id = uniqueId('skip-cli');
const env = { ...isolatedEnv(id), LOG_LEVEL: 'warn' };
const config = loadConfig(env);
const topic = config.topics.installations;
const dlq = config.topics.deadletter;
const group = groupIdOf(config, 'installations');
let admin: Admin;
let partition = -1;
let member: BatchConsumer | undefined;

const skip = (...args: string[]) =>
  runOperatorCommand(
    'skip-batch',
    ['--topic', topic, '--partition', String(partition), '--to-offset', '3', ...args],
    env,
  );
const deadLetters = async () =>
  (await admin.endOffsets(dlq)).reduce((n, e) => n + Number(e.end), 0);
const position = async () =>
  (await admin.committedOffsets(group, topic)).find((c) => c.partition === partition)?.offset;

beforeAll(async () => {
  admin = await testKafkaClient().createAdmin();
  await admin.ensureTopics(topicSpecs(config.topics));
  const producer = testKafkaClient().createProducer();
  await producer.connect();
  // One key: the five records on one partition.
  await producer.send(
    topic,
    [1, 2, 3, 4, 5].map(() => ({ key: '7', value: '{}' })),
  );
  await producer.disconnect();
  partition = (await admin.endOffsets(topic)).find((e) => e.end === '5')?.partition ?? -1;
  await admin.setCommittedOffset(group, topic, partition, '1');
});
afterAll(async () => {
  await member?.stop();
  await admin?.disconnect();
});

describe('the skip-batch command', () => {
  it('is a dry run without --execute: prints the plan, records and moves nothing', async () => {
    const run = await skip();
    expect(run, run.stderr).toMatchObject({ code: 0 });
    expect(run.stdout.split('\n')).toEqual([
      'skip plan (dry run: nothing changed; add --execute to do it):',
      `  record offsets 1-2 of ${topic}:${partition} on ${dlq} (reason undecodable_batch)`,
      `  move ${group} on ${topic}:${partition} from 1 to 3`,
      '',
    ]);
    expect(await position()).toBe('1');
    expect(await deadLetters()).toBe(0);
  });

  it('refuses while the group has members, recording nothing', async () => {
    // A member of the group on another, empty topic: it holds a place in the group and never
    // reads or commits anything on the topic of the skip.
    member = testKafkaClient().createConsumer({
      groupId: group,
      topics: [config.topics.access],
      fromBeginning: false,
    });
    await member.start(async () => undefined);
    await waitFor(
      'the member joined',
      async () => ((await admin.describeGroup(group)).members > 0 ? true : undefined),
      30_000,
    );
    const run = await skip('--execute', '--yes');
    expect(run).toMatchObject({ code: 1 });
    expect(run.stderr).toContain(`skip-batch: refused, ${group} has 1 member(s)`);
    expect(await position()).toBe('1');
    expect(await deadLetters()).toBe(0);
    await member.stop();
    member = undefined;
  });

  it('with --execute --yes and the group empty: records the skip, moves the group', async () => {
    await waitFor(
      'the group empty',
      async () => ((await admin.describeGroup(group)).members === 0 ? true : undefined),
      30_000,
    );
    const run = await skip('--execute', '--yes');
    expect(run, run.stderr).toMatchObject({ code: 0 });
    expect(run.stdout).toContain(`${group} now reads ${topic}:${partition} from 3 (skipped 1-2`);
    expect(await position()).toBe('3');
    expect(await deadLetters()).toBe(1);
  });
});
