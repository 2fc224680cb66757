import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/app.js';
import { createApiRedis } from '../../api/redis-client.js';
import { FLOW_STREAM_URL } from '../../api/routes/flow-stream-route.js';
import { createApiTracer } from '../../api/tracing/request-tracing.js';
import { loadConfig } from '../../src/config.js';
import { hashApiKey } from '../../src/domain/access-rule.js';
import type { InstallationWrite } from '../../src/projection/write-plan.js';
import { createInstallationStore } from '../../src/read-model/installation-store.js';
import { writeInstallations } from '../../src/read-model/installation-write.js';
import { changeChannel, createKeys, deviceTimesKey } from '../../src/read-model/keys.js';
import { duplicateConnection } from '../../src/read-model/redis-connection.js';
import { scriptedPipeline, withScripts } from '../../src/read-model/scripts.js';
import { createSeeder } from '../../tools/seed/read-model-seed.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import {
  allAttributeText,
  type InMemoryTracing,
  startInMemoryTracing,
} from '../support/in-memory-tracing.js';
import { parseOpenMetrics } from '../support/open-metrics-parser.js';
import {
  dropPrefix,
  redisClusterNodes,
  redisUrl,
  testLogger,
  testRedis,
  uniqueId,
  waitFor,
} from '../support/stack.js';
import { openSse, type SseStream } from '../support-api/sse-client.js';

// Issue 42, against the real Redis: a write made beneath a sampled span announces its
// traceparent with the change, and an untraced one announces exactly the kind, as before; the
// API's stream then pushes the event in a span linked to that write; and /metrics answers
// OpenMetrics with the exemplar of a sampled request to a scraper that asks for it, the text
// format to any other. The API runs in the test's process with the SDK's in-memory exporter.

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
const writeContext = () => {
  const traceId = hex(16);
  const spanId = hex(8);
  return { traceId, spanId, traceparent: `00-${traceId}-${spanId}-01` };
};
// Prometheus's own Accept, by default.
const PROMETHEUS_ACCEPT =
  'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';

describe('traced writes, stream pushes and exemplars', () => {
  const prefix = `${uniqueId('stream-tracing')}:`;
  const keys = createKeys(prefix);
  const config = loadConfig({
    REDIS_URL: redisUrl(),
    REDIS_CLUSTER_NODES: redisClusterNodes(),
    REDIS_KEY_PREFIX: prefix,
  });
  const base = config.api.basePath;
  const key = newApiKey();
  const redis = testRedis();
  // Sharded pub/sub on a cluster needs a subscriber per shard (ioredis's shardedSubscribers).
  const listener = duplicateConnection(redis, {}, true);
  const apiRedis = createApiRedis(config.redis, config.api.redisCommandTimeoutMs);
  const seed = createSeeder(redis, prefix);
  const heard: Array<[string, string]> = [];
  const open: SseStream[] = [];
  let tracing: InMemoryTracing;
  let app: ReturnType<typeof buildApi>;
  let origin = '';

  /** The announcements heard on an installation's channel, from `from` on. */
  const announced = (id: number, from: number) =>
    heard
      .slice(from)
      .filter(([channel]) => channel === changeChannel(keys, id))
      .map(([, m]) => m);
  const listen = async (id: number) => {
    await listener.ssubscribe(changeChannel(keys, id));
  };
  const battery = (id: number, soe: number, traceparent?: string) =>
    seed.devices(
      id,
      [
        {
          category: 'battery',
          record: device('battery', id, id, Date.now(), { soe, powerDc: 100 }),
        },
      ],
      Date.now(),
      config.ingest.onlineWindowSeconds,
      traceparent,
    );

  beforeAll(async () => {
    tracing = startInMemoryTracing();
    listener.on('smessage', (channel: string, message: string) => heard.push([channel, message]));
    app = buildApi({ config, logger: testLogger, redis: apiRedis, tracer: createApiTracer() });
    origin = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    for (const s of open) s.close();
    await app?.close();
    apiRedis.disconnect();
    listener.disconnect();
    await dropPrefix(redis, prefix);
    redis.disconnect();
    await tracing?.stop();
  });
  beforeEach(() => {
    tracing.sampled = true;
  });
  afterEach(() => {
    tracing.reset();
  });

  it('announces the traceparent of a traced write and exactly the kind of an untraced one', async () => {
    const id = 4501;
    await listen(id);
    const from = heard.length;
    const { traceparent } = writeContext();
    const untracedStore = createInstallationStore({ conn: redis, keys });
    const tracedStore = createInstallationStore({
      conn: redis,
      keys,
      traceparent: () => traceparent,
    });
    await untracedStore.upsert(installation(id), null, 1_000);
    await tracedStore.upsert(installation(id), null, 2_000);
    await battery(id, 40);
    await battery(id, 41, traceparent);
    // Deleted devices and a traceparent together: the fields go, the context is announced.
    const conn = withScripts(redis);
    const [fresh, stale] = ['battery:91', 'battery:92'];
    await redis.hset(keys.devices(id), fresh, '{}', stale, '{}');
    const revision = Number(await redis.hget(deviceTimesKey(keys, id), '#rev'));
    const removal = (removed: string, expectedRevision: number, flow: boolean) =>
      ({
        id,
        expectedRevision,
        set: new Map(),
        removed: new Set([removed]),
        flow: flow ? { data: '{}', validUntilMs: 0 } : null,
      }) as unknown as InstallationWrite;
    await writeInstallations(conn, keys, [removal(fresh, revision, false)]);
    await writeInstallations(
      conn,
      keys,
      [removal(stale, revision + 1, true)],
      undefined,
      traceparent,
    );
    expect(await redis.hkeys(keys.devices(id))).not.toContain(fresh);
    expect(await redis.hkeys(keys.devices(id))).not.toContain(stale);
    expect(await redis.hexists(keys.devices(id), traceparent)).toBe(0);
    const acl = scriptedPipeline(conn);
    acl.writeAclEntry(keys.acl(id), changeChannel(keys, id), 77, 1, '1');
    acl.writeAclEntry(keys.acl(id), changeChannel(keys, id), 77, 2, '0', traceparent);
    await acl.exec();
    await untracedStore.remove(id, 3_000);
    await tracedStore.upsert(installation(id), null, 4_000);
    await tracedStore.remove(id, 5_000);

    // A battery's state changes the flow: announced as 'flow' (or 'devices' if it did not).
    const expected = [
      'installation',
      `installation ${traceparent}`,
      expect.stringMatching(/^(flow|devices)$/),
      expect.stringMatching(new RegExp(`^(flow|devices) ${traceparent}$`)),
      'devices',
      `flow ${traceparent}`,
      'acl',
      `acl ${traceparent}`,
      'deleted',
      `installation ${traceparent}`,
      `deleted ${traceparent}`,
    ];
    // Sharded pub/sub is delivered in order on one connection; wait for all, then compare.
    await waitFor('every announcement', async () =>
      announced(id, from).length >= expected.length ? true : undefined,
    );
    expect(announced(id, from)).toEqual(expected);
  });

  it("spans a stream's push after a traced write, linked to it; nothing for an untraced one", async () => {
    const id = 4502;
    await seed.installation(installation(id));
    await seed.liveKey(key, { app: 45, installations: [installation(id)] });
    await battery(id, 50);
    const stream = await openSse(`${origin}${base}${FLOW_STREAM_URL}?installationId=${id}`, {
      'api-key': key,
    });
    open.push(stream);
    expect(stream.status).toBe(200);
    await stream.next(5_000);
    tracing.reset();

    const pushes = () => tracing.spans().filter((s) => s.name === 'stream push');
    await battery(id, 51);
    const untracedEvent = await stream.next(5_000);
    expect(untracedEvent.data).toContain('"batterySoe":51');
    const write = writeContext();
    await battery(id, 52, write.traceparent);
    const tracedEvent = await stream.next(5_000);
    expect(tracedEvent.data).toContain('"batterySoe":52');
    const [push, ...more] = await waitFor('the push span', async () =>
      pushes().length > 0 ? pushes() : undefined,
    );

    // The untraced write's push made no span; the traced one's is linked to the write.
    expect(more).toEqual([]);
    expect(push?.links.map((l) => [l.context.traceId, l.context.spanId])).toEqual([
      [write.traceId, write.spanId],
    ]);
    expect(push?.parentSpanContext).toBeUndefined();
    expect(push?.attributes).toMatchObject({ 'installation.id': id, 'stream.outcome': 'sent' });
    const text = allAttributeText(tracing.spans());
    expect(text).not.toContain(key);
    expect(text).not.toContain(hashApiKey(key));
  });

  it('answers /metrics as OpenMetrics with the exemplar of a sampled request, as text to others', async () => {
    const id = 4503;
    await seed.installation(installation(id));
    await seed.liveKey(key, { app: 45, installations: [installation(id)] });
    const route = `${base}/getInstallationCurrentEnergyFlow`;
    const res = await app.inject({
      url: `${route}?installationId=${id}`,
      headers: { 'api-key': key },
    });
    expect(res.statusCode).toBe(200);
    const request = tracing.spans().find((s) => s.attributes['http.route'] === route);
    expect(request).toBeDefined();

    const om = await app.inject({ url: '/metrics', headers: { accept: PROMETHEUS_ACCEPT } });
    expect(om.headers['content-type']).toBe(
      'application/openmetrics-text; version=1.0.0; charset=utf-8',
    );
    const latency = parseOpenMetrics(om.body).find(
      (f) => f.name === 'api_request_duration_seconds',
    );
    const exemplars = (latency?.samples ?? [])
      .filter((s) => s.labels.route === route && s.exemplar !== undefined)
      .map((s) => s.exemplar?.labels);
    expect(exemplars).toContainEqual({
      trace_id: request?.spanContext().traceId,
      span_id: request?.spanContext().spanId,
    });

    for (const accept of [undefined, 'text/plain;version=0.0.4', '*/*']) {
      const text = await app.inject({ url: '/metrics', headers: accept ? { accept } : {} });
      expect(text.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(text.body).toContain('# TYPE api_requests_total counter');
      expect(text.body).toContain('api_request_duration_seconds_bucket{');
      expect(text.body).not.toContain(' # {');
      expect(text.body).not.toContain('# EOF');
    }
    // Not sampled: counted, no exemplar of its own.
    tracing.sampled = false;
    const unsampled = await app.inject({
      url: `${route}?installationId=${id}&n=1`,
      headers: { 'api-key': key },
    });
    expect(unsampled.statusCode).toBe(200);
    const after = await app.inject({ url: '/metrics', headers: { accept: PROMETHEUS_ACCEPT } });
    const ids = (
      parseOpenMetrics(after.body).find((f) => f.name === 'api_request_duration_seconds')
        ?.samples ?? []
    )
      .filter((s) => s.labels.route === route)
      .flatMap((s) => (s.exemplar ? [s.exemplar.labels.trace_id] : []));
    expect(new Set(ids)).toEqual(new Set([request?.spanContext().traceId]));
  });
});
