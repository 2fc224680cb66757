import { randomBytes } from 'node:crypto';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLOW_STREAM_URL } from '../../api/routes/flow-stream-route.js';
import type { Producer } from '../../consumers/kafka/client.js';
import { loadConfig } from '../../src/config.js';
import { hashApiKey } from '../../src/domain/access-rule.js';
import {
  apiKeyCreated,
  applicationUpserted,
  deviceState,
  grant,
  installationUpserted,
  type Keyed,
  membership,
} from '../e2e/support/events.js';
import { startApiService, startConsumerService, stopServices } from '../e2e/support/services.js';
import type { ServiceProcess } from '../faults/processes.js';
import {
  type OtlpReceiver,
  type ReceivedSpan,
  startOtlpReceiver,
} from '../support/otlp-tracing-receiver.js';
import {
  dropPrefix,
  isolatedEnv,
  testKafkaClient,
  testRedis,
  uniqueId,
  waitFor,
} from '../support/stack.js';
import { installation, newApiKey } from '../support-api/fixtures.js';
import { openSse, type SseStream } from '../support-api/sse-client.js';

// Issue 42, the real processes exporting over OTLP/HTTP to a receiver in the test: an event
// produced with a traceparent is consumed in a batch linked to its producer, written beneath
// that batch's `write` span, whose traceparent the change announcement carries; the API's open
// stream of that installation pushes the new flow in a `stream push` span linked to that write,
// with the re-read's Redis commands beneath it.

const CLIENT = 3; // OTLP SpanKind

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

describe('a stream event linked to the write that caused it, over OTLP', () => {
  const id = uniqueId('stream-otlp');
  const env = { ...isolatedEnv(id), LOG_LEVEL: 'info' };
  const { topics, redis } = loadConfig(env);
  const key = newApiKey();
  const installationId = 4601;
  const producerSpan = { traceId: hex(16), spanId: hex(8) };
  const basePath = '/application/v1';
  let receiver: OtlpReceiver;
  let producer: Producer;
  let services: ServiceProcess[] = [];
  let stream: SseStream | undefined;
  const produce = (topic: string, k: Keyed, headers?: Record<string, string>) =>
    producer.send(topic, [
      { key: k.key, value: JSON.stringify(k.event), ...(headers ? { headers } : {}) },
    ]);
  const otel = () => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '200',
    OTEL_TRACES_SAMPLER: 'always_on',
  });

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    producer = testKafkaClient().createProducer();
    await producer.connect();
  });
  afterAll(async () => {
    stream?.close();
    await stopServices(services);
    await producer?.disconnect();
    await receiver?.close();
    const conn = testRedis();
    await dropPrefix(conn, redis.keyPrefix);
    conn.disconnect();
  });

  it('links the stream push to the write span of the consumed event', async () => {
    const apiPort = await freePort();
    services = [
      await startConsumerService('stream-otlp-consumers', { ...env, ...otel() }),
      await startApiService('stream-otlp-api', apiPort, { ...env, ...otel() }),
    ];
    await produce(topics.installations, installationUpserted(installation(installationId), null));
    for (const k of [
      applicationUpserted(62, { type: 'user', id: 10 }),
      apiKeyCreated('t', 62, key),
      grant(true, 62, installationId),
      membership(true, 10, installationId),
    ])
      await produce(topics.access, k);
    const url = `http://127.0.0.1:${apiPort}${basePath}${FLOW_STREAM_URL}?installationId=${installationId}`;
    stream = await waitFor(
      'a stream of the installation',
      async () => {
        const s = await openSse(url, { 'api-key': key });
        if (s.status === 200) return s;
        s.close();
        return undefined;
      },
      30_000,
    );
    await stream.next(10_000);

    await produce(
      topics.telemetry,
      deviceState(installationId, 'battery', 1, Date.now() - 1_000, {
        soe: 57,
        ratedEnergy: 5000,
        powerDc: 700,
      }),
      { traceparent: `00-${producerSpan.traceId}-${producerSpan.spanId}-01` },
    );
    const event = await waitFor(
      'the stream event of the battery',
      async () => {
        const next = await stream?.next(30_000);
        return next?.data.includes('"batterySoe":57') ? next : undefined;
      },
      30_000,
    );
    expect(event.event).toBe('energyFlow');
    stream.close();
    // Stopping flushes every span the processes still hold: nothing is waited for by time.
    await stopServices(services);

    const spans = receiver.spans;
    const batch = spans.find(
      (s) =>
        s.name === `process ${topics.telemetry}` &&
        s.links.some((l) => l.traceId === producerSpan.traceId && l.spanId === producerSpan.spanId),
    );
    expect(batch, 'a batch span linked to the producer').toBeDefined();
    const inTrace = spans.filter((s) => s.traceId === batch?.traceId);
    const pass = inTrace.find(
      (s) => s.name === 'projection pass' && s.parentSpanId === batch?.spanId,
    );
    const write = inTrace.find((s) => s.name === 'write' && s.parentSpanId === pass?.spanId);
    expect(write?.attributes['ingest.installation_ids']).toEqual([installationId]);

    const pushes = spans.filter(
      (s) =>
        s.service === 'read-model-api' &&
        s.name === 'stream push' &&
        s.links.some((l) => l.traceId === write?.traceId && l.spanId === write?.spanId),
    );
    expect(pushes, 'a stream push linked to the write').toHaveLength(1);
    const [push] = pushes as [ReceivedSpan];
    expect(push.parentSpanId).toBe('');
    expect(push.traceId).not.toBe(write?.traceId);
    expect(push.attributes).toMatchObject({
      'installation.id': installationId,
      'stream.outcome': 'sent',
    });
    expect(push.startMs).toBeGreaterThanOrEqual(write?.startMs ?? Number.POSITIVE_INFINITY);
    // The re-read after the near-cache let go of the installation: its Redis commands beneath.
    expect(
      spans.filter((s) => s.kind === CLIENT && s.parentSpanId === push.spanId).length,
    ).toBeGreaterThan(0);

    const exported = receiver.bodies.join('\n');
    expect(exported).not.toContain(key);
    expect(exported).not.toContain(hashApiKey(key));
  }, 120_000);
});
