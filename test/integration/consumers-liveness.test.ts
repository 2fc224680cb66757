import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { topicSpecs } from '../../consumers/kafka/topics.js';
import { loadConfig } from '../../src/config.js';
import { groupIdOf } from '../../src/consumer-groups.js';
import { createKeys } from '../../src/read-model/keys.js';
import { startJavaProducer } from '../../tools/java-producer.js';
import {
  dropPrefix,
  isolatedEnv,
  kafkaBrokers,
  testKafkaClient,
  testRedis,
  uniqueId,
  waitFor,
} from '../support/stack.js';
import { installation, iso } from './support/consumer-harness.js';
import { type ConsumerProcess, startConsumerProcess } from './support/consumer-process.js';
import { corruptBatch } from './support/segment-file.js';

// A record batch that no codec decodes (its lz4 payload corrupted in the broker's segment, as
// bad storage would): the consumer process reads up to it, stops at its exact offset, says so
// (readiness, metric, log), exits non-zero after the grace period, and does the same after a
// restart. The operator's one command records the skip and moves the group; then it goes on.

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// Long enough for the test's scrapes below (readiness, metrics, the lag's next refresh) on a busy
// machine: the process is gone after it.
const GRACE_MS = 6_000;
const id = uniqueId('live');
const env = {
  ...isolatedEnv(id),
  CONSUMER_FATAL_EXIT_GRACE_MS: String(GRACE_MS),
  CONSUMER_LAG_INTERVAL_MS: '200',
};
const config = loadConfig(env);
const topic = config.topics.installations;
const group = groupIdOf(config, 'installations');
const keys = createKeys(config.redis.keyPrefix);
const redis = testRedis();
const processes: ConsumerProcess[] = [];

afterAll(async () => {
  await Promise.all(processes.map((p) => p.kill()));
  await dropPrefix(redis, config.redis.keyPrefix);
  redis.disconnect();
});

const upsert = (n: number) => ({
  type: 'installation.upserted',
  occurredAt: iso(Date.now()),
  installation: installation(n, `plant ${n}`),
  companyId: null,
});
const stored = async (n: number) => (await redis.exists(keys.installation(n))) === 1;
const metricLine = (text: string, name: string, labels: string) =>
  text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(labels));

function runSkip(args: string[]): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'tools/skip-batch.ts', ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c) => {
    out += String(c);
  });
  child.stderr.on('data', (c) => {
    out += String(c);
  });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, out })));
}

describe('a record batch that no codec decodes', () => {
  it('stops its partition at that offset, loudly, until the operator skips it', async () => {
    const admin = await testKafkaClient().createAdmin();
    await admin.ensureTopics(topicSpecs(config.topics));
    const java = await startJavaProducer(kafkaBrokers());
    // Three lz4 batches on partition 0: one good record, the batch to corrupt, one more.
    java.send('lz4', topic, '1', upsert(1), 0);
    await java.flush();
    java.send('lz4', topic, '2', upsert(2), 0);
    java.send('lz4', topic, '3', upsert(3), 0);
    const [bad] = await java.flush();
    java.send('lz4', topic, '4', upsert(4), 0);
    await java.flush();
    await java.close();
    expect(bad?.offset).toBe('1');
    await corruptBatch(topic, 0, 1n);

    const first = startConsumerProcess(env);
    processes.push(first);
    await waitFor('the record before the batch applied', async () =>
      (await stored(1)) ? true : undefined,
    );
    const fatal = await first.log('the fatal log line', (l) => l.reason === 'undecodable_batch');
    expect(fatal).toMatchObject({
      topic,
      partition: 0,
      offset: '1',
      lastOffset: '2',
      nextOffset: '3',
      codec: 'lz4',
    });
    await waitFor('readiness false', async () =>
      (await first.get('/readyz')).status === 503 ? true : undefined,
    );
    const metrics = (await first.get('/metrics')).body;
    expect(
      metricLine(metrics, 'ingest_consumer_failures_total', `reason="undecodable_batch"`),
    ).toMatch(/ 1$/);
    // The ConsumerNotReady alert reads readiness as a series.
    expect(metrics).toMatch(/^ingest_ready 0$/m);
    // Stopped at offset 1 of 4: the lag shows the three records not read.
    await waitFor('lag of the stopped partition', async () => {
      const text = (await first.get('/metrics')).body;
      return metricLine(text, 'ingest_consumer_lag', `topic="${topic}",partition="0"`)?.endsWith(
        ' 3',
      )
        ? true
        : undefined;
    });
    expect(await first.exited).toBe(1);
    // From the line's own time: when the test read it depends on the pipe, not on the process.
    expect(Date.now() - Number(fatal.time)).toBeGreaterThanOrEqual(GRACE_MS - 500);
    expect(await stored(4)).toBe(false);

    // A restart stops at the same batch: nothing is skipped on its own.
    const second = startConsumerProcess(env);
    processes.push(second);
    const again = await second.log(
      'the fatal log line again',
      (l) => l.reason === 'undecodable_batch',
    );
    expect(again).toMatchObject({ partition: 0, offset: '1' });
    expect(await second.exited).toBe(1);
    expect(await stored(4)).toBe(false);

    // The operator's command: recorded on the dead-letter topic, group moved to offset 3.
    const skipped = await runSkip([
      '--topic',
      topic,
      '--partition',
      '0',
      '--to-offset',
      '3',
      '--execute',
      '--yes',
    ]);
    expect(skipped, skipped.out).toMatchObject({ code: 0 });
    expect(skipped.out).toContain(`${group} now reads ${topic}:0 from 3`);
    const third = startConsumerProcess(env);
    processes.push(third);
    await waitFor('the record after the batch applied', async () =>
      (await stored(4)) ? true : undefined,
    );
    await waitFor('ready', async () =>
      (await third.get('/readyz')).status === 200 ? true : undefined,
    );
    expect((await third.get('/metrics')).body).toMatch(/^ingest_ready 1$/m);
    expect(await stored(2)).toBe(false);
    const dead = await deadLetterHeaders(config.topics.deadletter);
    expect(dead).toContainEqual(
      expect.objectContaining({
        'x-source-topic': topic,
        'x-source-partition': '0',
        'x-source-offset': '1',
        'x-reason': 'undecodable_batch',
      }),
    );
    await admin.disconnect();
  });
});

async function deadLetterHeaders(deadletter: string): Promise<Array<Record<string, string>>> {
  const found: Array<Record<string, string>> = [];
  const reader = testKafkaClient().createConsumer({
    groupId: uniqueId('dlq'),
    topics: [deadletter],
    fromBeginning: true,
  });
  await reader.start(async (batch) => {
    for (const m of batch.messages) {
      found.push(
        Object.fromEntries(
          Object.entries(m.headers).map(([k, v]) => [k, v?.toString('utf8') ?? '']),
        ),
      );
    }
  });
  await waitFor('dead letters read', async () => (found.length > 0 ? true : undefined));
  await reader.stop();
  return found;
}
