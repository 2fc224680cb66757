import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLOW_STREAM_URL } from '../../api/routes/flow-stream-route.js';
import type { Producer } from '../../consumers/kafka/client.js';
import { loadConfig } from '../../src/config.js';
import { hashApiKey } from '../../src/domain/access-rule.js';
import { installation, newApiKey } from '../../tools/seed/records.js';
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
import { freePort } from '../support/free-port.js';
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
import { openSse, type SseStream } from '../support-api/sse-client.js';

// Issue 42: the real processes export their spans over OTLP/HTTP to a receiver in the test. One
// event produced with a traceparent is followed through the consumer's batch (linked to the
// producer's span), its pass, load, fold and write, the Redis commands beneath, to the push of
// an open stream of that installation (a span linked to that write: the announcement carries its
// traceparent) and the next read of that installation's flow over HTTP; no exported byte holds the API key or its hash;
// and the sampler configured by OTEL_TRACES_SAMPLER decides what is exported.

const CLIENT = 3; // OTLP SpanKind
const CONSUMER = 5;
const SERVER = 2;

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const isRedis = (s: ReceivedSpan) =>
  s.kind === CLIENT &&
  (s.attributes['db.system'] === 'redis' || s.attributes['db.system.name'] === 'redis');

/** The traceparent header of the first message on the dead-letter topic. */
async function firstDeadLetter(topic: string, groupId: string): Promise<string> {
  const consumer = testKafkaClient().createConsumer({
    groupId,
    topics: [topic],
    fromBeginning: true,
  });
  let found: string | undefined;
  await consumer.start(async (batch) => {
    found ??= batch.messages[0]?.headers.traceparent?.toString('latin1') ?? '';
  });
  try {
    return await waitFor('a dead letter', async () => found, 30_000);
  } finally {
    await consumer.stop();
  }
}

describe('tracing over OTLP', () => {
  const id = uniqueId('tracing');
  const env = { ...isolatedEnv(id), LOG_LEVEL: 'info' };
  const { topics, redis } = loadConfig(env);
  const key = newApiKey();
  const installationId = 4201;
  const producerSpan = { traceId: hex(16), spanId: hex(8) };
  const rejectedSpan = { traceId: hex(16), spanId: hex(8) };
  let receiver: OtlpReceiver;
  let producer: Producer;
  // Every process a test started, pushed as it starts: afterAll stops those a failure left.
  const services: ServiceProcess[] = [];
  let stream: SseStream | undefined;
  const basePath = '/application/v1';
  const produce = (topic: string, k: Keyed, headers?: Record<string, string>) =>
    producer.send(topic, [
      { key: k.key, value: JSON.stringify(k.event), ...(headers ? { headers } : {}) },
    ]);

  const otel = (extra: Record<string, string> = {}) => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '200',
    ...extra,
  });
  const get = (port: number, path: string, headers: Record<string, string> = {}) =>
    fetch(`http://127.0.0.1:${port}${basePath}${path}`, {
      headers: { 'api-key': key, ...headers },
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

  it('follows one event from its producer through consume and write to the next read', async () => {
    const apiPort = await freePort();
    services.push(
      await startConsumerService('tracing-consumers', {
        ...env,
        ...otel({ OTEL_TRACES_SAMPLER: 'always_on' }),
      }),
    );
    services.push(
      await startApiService('tracing-api', apiPort, {
        ...env,
        ...otel({ OTEL_TRACES_SAMPLER: 'always_on' }),
      }),
    );
    await produce(topics.installations, installationUpserted(installation(installationId), null));
    for (const k of [
      applicationUpserted(61, { type: 'user', id: 9 }),
      apiKeyCreated('t', 61, key),
      grant(true, 61, installationId),
      membership(true, 9, installationId),
    ])
      await produce(topics.access, k);
    await waitFor(
      'the key reads the installation',
      async () => {
        const res = await get(apiPort, `/getInstallationDevices?installationId=${installationId}`);
        const body = await res.text();
        if (res.status !== 200) throw new Error(`${res.status} ${body}`);
        return true;
      },
      30_000,
    );
    const streamUrl = `http://127.0.0.1:${apiPort}${basePath}${FLOW_STREAM_URL}?installationId=${installationId}`;
    const open = await openSse(streamUrl, { 'api-key': key });
    expect(open.status).toBe(200);
    stream = open;
    await open.next(10_000);

    const observed = Date.now() - 1_000;
    await produce(
      topics.telemetry,
      deviceState(installationId, 'battery', 1, observed, {
        soe: 55,
        ratedEnergy: 5000,
        powerDc: 700,
      }),
      { traceparent: `00-${producerSpan.traceId}-${producerSpan.spanId}-01` },
    );
    // The stream first: a read between the write and its push could refill the near-cache, and
    // the push would then read nothing beneath its span.
    const pushed = await waitFor(
      'the stream event of the battery',
      async () => {
        const next = await open.next(30_000);
        return next?.data.includes('"batterySoe":55') ? next : undefined;
      },
      30_000,
    );
    expect(pushed.event).toBe('energyFlow');
    open.close();
    await waitFor(
      'the battery is served',
      async () => {
        const res = await get(apiPort, `/getInstallationDevices?installationId=${installationId}`);
        const body = (await res.json()) as { batteries?: unknown[] };
        return body.batteries?.length === 1 || undefined;
      },
      30_000,
    );
    // A message the consumers refuse: dead-lettered, the dead letter carrying the batch's context.
    await producer.send(topics.telemetry, [
      {
        key: String(installationId),
        value: 'not json',
        headers: { traceparent: `00-${rejectedSpan.traceId}-${rejectedSpan.spanId}-01` },
      },
    ]);
    const deadLetter = await firstDeadLetter(topics.deadletter, `${id}-dl-reader`);
    const flow = await get(
      apiPort,
      `/getInstallationCurrentEnergyFlow?installationId=${installationId}`,
    );
    expect(flow.status).toBe(200);
    await flow.arrayBuffer();
    const etag = flow.headers.get('etag') ?? '';
    const again = await get(
      apiPort,
      `/getInstallationCurrentEnergyFlow?installationId=${installationId}`,
      {
        'if-none-match': etag,
      },
    );
    expect(again.status).toBe(304);
    // Stopping flushes every span the processes still hold: nothing is waited for by time.
    await stopServices(services);

    const spans = receiver.spans;
    // The consumer's batch, linked to the producer's span.
    const batch = spans.find(
      (s) =>
        s.name === `process ${topics.telemetry}` &&
        s.links.some((l) => l.traceId === producerSpan.traceId && l.spanId === producerSpan.spanId),
    );
    expect(batch, 'a batch span linked to the producer').toBeDefined();
    if (!batch) return;
    expect(batch.service).toBe('read-model-consumers');
    expect(batch.kind).toBe(CONSUMER);
    expect(batch.attributes).toMatchObject({
      'messaging.system': 'kafka',
      'messaging.destination.name': topics.telemetry,
    });
    const inTrace = spans.filter((s) => s.traceId === batch.traceId);
    const childrenOf = (parent: ReceivedSpan) =>
      inTrace.filter((s) => s.parentSpanId === parent.spanId);
    const [pass] = childrenOf(batch).filter((s) => s.name === 'projection pass');
    expect(pass).toBeDefined();
    if (!pass) return;
    const phases = childrenOf(pass);
    expect(phases.map((s) => s.name)).toEqual(expect.arrayContaining(['load', 'fold', 'write']));
    const write = phases.find((s) => s.name === 'write') as ReceivedSpan;
    expect(write.attributes).toMatchObject({
      'ingest.installations': 1,
      'ingest.devices': 1,
      'ingest.installation_ids': [installationId],
    });
    expect(write.attributes['ingest.redis_round_trips']).toBeGreaterThanOrEqual(1);
    const load = phases.find((s) => s.name === 'load') as ReceivedSpan;
    expect(load.attributes['ingest.installations']).toBe(1);
    // The Redis commands beneath the phases that sent them.
    const phaseIds = new Set(phases.map((s) => s.spanId));
    expect(
      inTrace.filter((s) => isRedis(s) && phaseIds.has(s.parentSpanId)).length,
    ).toBeGreaterThan(0);

    // The stream's push of that write: a trace of its own, linked to the write, the re-read's
    // Redis commands beneath it (the announcement emptied the near-cache's entry).
    const pushes = spans.filter(
      (s) =>
        s.service === 'read-model-api' &&
        s.name === 'stream push' &&
        s.links.some((l) => l.traceId === write.traceId && l.spanId === write.spanId),
    );
    expect(pushes, 'a stream push linked to the write').toHaveLength(1);
    const [push] = pushes as [ReceivedSpan];
    expect(push.parentSpanId).toBe('');
    expect(push.traceId).not.toBe(write.traceId);
    expect(push.attributes).toMatchObject({
      'installation.id': installationId,
      'stream.outcome': 'sent',
    });
    expect(push.startMs).toBeGreaterThanOrEqual(write.startMs);
    expect(spans.some((s) => isRedis(s) && s.parentSpanId === push.spanId)).toBe(true);

    // The next read of that installation's flow: its route, status, cache outcome and id.
    const route = `${basePath}/getInstallationCurrentEnergyFlow`;
    const reads = spans.filter(
      (s) => s.service === 'read-model-api' && s.attributes['http.route'] === route,
    );
    const read = reads.find((s) => s.attributes['http.response.status_code'] === 200);
    expect(read?.kind).toBe(SERVER);
    expect(read?.name).toBe(`GET ${route}`);
    expect(read?.attributes).toMatchObject({
      'installation.id': installationId,
      'url.path': route,
    });
    expect(['hit', 'miss']).toContain(read?.attributes['read.cache']);
    expect(read && read.startMs >= write.endMs).toBe(true);
    const notModified = reads.find((s) => s.attributes['http.response.status_code'] === 304);
    expect(notModified?.attributes['installation.id']).toBe(installationId);
    // The API's Redis commands beneath the requests that sent them (the first reads missed the
    // near-cache; a later one may be answered from memory, with none).
    const requests = new Set(
      spans.filter((s) => s.service === 'read-model-api' && s.kind === SERVER).map((s) => s.spanId),
    );
    expect(spans.some((s) => isRedis(s) && requests.has(s.parentSpanId))).toBe(true);

    // The refused message: recorded with its reason on its batch, whose context the dead letter carries.
    const refusing = spans.find((s) =>
      s.links.some((l) => l.traceId === rejectedSpan.traceId && l.spanId === rejectedSpan.spanId),
    );
    expect(refusing?.events).toContainEqual({
      name: 'dead_letter',
      attributes: expect.objectContaining({ 'ingest.reason': 'invalid_json' }),
    });
    expect(deadLetter).toBe(`00-${refusing?.traceId}-${refusing?.spanId}-01`);

    // No exported byte holds the key or its hash, whatever attribute or resource would carry it.
    const exported = receiver.bodies.join('\n');
    expect(exported.length).toBeGreaterThan(0);
    expect(exported).not.toContain(key);
    expect(exported).not.toContain(hashApiKey(key));
  }, 120_000);

  it('exports what the sampler keeps and nothing else', async () => {
    const apiPort = await freePort();
    const service = `read-model-api-${id}`;
    // Parent-based, ratio 0: only requests whose caller sampled their trace are traced.
    services.push(
      await startApiService('tracing-api-sampled', apiPort, {
        ...env,
        ...otel({
          OTEL_SERVICE_NAME: service,
          OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
          OTEL_TRACES_SAMPLER_ARG: '0',
        }),
      }),
    );
    const sampled = { traceId: hex(16), spanId: hex(8) };
    const dropped = { traceId: hex(16), spanId: hex(8) };
    const path = `/getInstallationCurrentEnergyFlow?installationId=${installationId}`;
    // Whatever the answer (the key's access is not this test's concern), each is a request.
    const send = async (headers: Record<string, string> = {}) =>
      void (await (await get(apiPort, path, headers)).arrayBuffer());
    for (let i = 0; i < 5; i++) await send();
    await send({ traceparent: `00-${dropped.traceId}-${dropped.spanId}-00` });
    await send({ traceparent: `00-${sampled.traceId}-${sampled.spanId}-01` });
    await stopServices(services);

    const exported = receiver.spans.filter((s) => s.service === service);
    const requests = exported.filter((s) => s.kind === SERVER);
    expect(requests.map((s) => [s.traceId, s.parentSpanId])).toEqual([
      [sampled.traceId, sampled.spanId],
    ]);
    expect(exported.every((s) => s.traceId === sampled.traceId)).toBe(true);
  }, 120_000);
});
