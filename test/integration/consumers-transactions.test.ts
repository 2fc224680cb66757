import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { groupIdOf } from '../../src/consumer-groups.js';
import { type JavaProducer, startJavaProducer } from '../../tools/java-producer.js';
import { kafkaBrokers, testKafkaClient, waitFor } from '../support/stack.js';
import { type Harness, installation, iso, startHarness } from './support/consumer-harness.js';

// Transactions from the Java producer: the consumers read committed records only, and their
// committed offsets pass the transaction markers, so offset-based lag reads 0 when caught up.

let h: Harness;
let java: JavaProducer;

beforeAll(async () => {
  h = await startHarness('txn', { env: { CONSUMER_LAG_INTERVAL_MS: '200' } });
  await waitFor('consumers in their groups', async () =>
    (await h.app.isReady()) ? true : undefined,
  );
  java = await startJavaProducer(kafkaBrokers());
});
afterAll(async () => {
  await java?.close();
  await h?.stop();
});

const upsert = (id: number) => ({
  type: 'installation.upserted',
  occurredAt: iso(Date.now()),
  installation: installation(id, `plant ${id}`),
  companyId: null,
});
const stored = async (id: number) => (await h.redis.exists(h.keys.installation(id))) === 1;

describe('transactional producers', () => {
  it('applies committed transactions only, and the group ends at the last stable offset with lag 0', async () => {
    const topic = h.config.topics.installations;
    const txn = `${topic}-txn`;
    // Offsets on partition 0: 0-1 committed, 2 marker, 3 aborted, 4 marker, 5 committed, 6 marker.
    java.begin('lz4', txn);
    java.send('lz4', topic, '71001', upsert(71001), 0);
    java.send('lz4', topic, '71002', upsert(71002), 0);
    java.commit();
    java.begin('lz4', txn);
    java.send('lz4', topic, '71003', upsert(71003), 0);
    await java.flush(); // on the broker, then aborted
    java.abort();
    java.begin('lz4', txn);
    java.send('lz4', topic, '71005', upsert(71005), 0);
    java.commit();
    await java.flush();

    await waitFor('committed records applied', async () =>
      (await stored(71001)) && (await stored(71002)) && (await stored(71005)) ? true : undefined,
    );
    expect(await stored(71003)).toBe(false);

    const admin = await testKafkaClient().createAdmin();
    try {
      const group = groupIdOf(h.config, 'installations');
      const end = (await admin.endOffsets(topic)).find((e) => e.partition === 0)?.end;
      expect(end).toBe('7');
      await waitFor('group committed at the last stable offset', async () => {
        const committed = (await admin.committedOffsets(group, topic)).find(
          (c) => c.partition === 0,
        );
        return committed?.offset === end ? true : undefined;
      });
    } finally {
      await admin.disconnect();
    }
    await h.app.refreshLag();
    const lag = await h.app.metrics.getSingleMetric('ingest_consumer_lag')?.get();
    expect(lag?.values).toContainEqual(
      expect.objectContaining({ labels: { topic, partition: '0' }, value: 0 }),
    );
  });
});
