import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { buildApi } from '../../api/app.js';
import { createApiRedis } from '../../api/redis-client.js';
import { createApiTracer } from '../../api/tracing/request-tracing.js';
import { loadConfig } from '../../src/config.js';
import { hashApiKey } from '../../src/domain/access-rule.js';
import { createSeeder } from '../../tools/seed/read-model-seed.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import {
  allAttributeText,
  type InMemoryTracing,
  startInMemoryTracing,
} from '../support/in-memory-tracing.js';
import {
  dropPrefix,
  redisClusterNodes,
  redisUrl,
  testLogger,
  testRedis,
  uniqueId,
  waitFor,
} from '../support/stack.js';

// The API's request spans in the test's process, with the SDK's in-memory exporter: route,
// status, near-cache outcome and installation id on a GET and on a form POST (whose body is
// read outside the request's context), the caller's traceparent as parent, nothing for a
// refused caller's installation, nothing at all for a dropped request, and no key anywhere.

describe('API request spans', () => {
  const prefix = `${uniqueId('api-tracing')}:`;
  const config = loadConfig({
    REDIS_URL: redisUrl(),
    REDIS_CLUSTER_NODES: redisClusterNodes(),
    REDIS_KEY_PREFIX: prefix,
  });
  const base = config.api.basePath;
  const route = `${base}/getInstallationCurrentEnergyFlow`;
  const key = newApiKey();
  const id = 4301;
  const seedRedis = testRedis();
  const redis = createApiRedis(config.redis, config.api.redisCommandTimeoutMs);
  let tracing: InMemoryTracing;
  let app: ReturnType<typeof buildApi>;

  const requestSpans = () => tracing.spans().filter((s) => s.attributes['http.route'] === route);

  beforeAll(async () => {
    tracing = startInMemoryTracing();
    app = buildApi({ config, logger: testLogger, redis, tracer: createApiTracer() });
    const seed = createSeeder(seedRedis, prefix);
    const now = Date.now();
    await seed.installation(installation(id));
    await seed.devices(
      id,
      [
        {
          category: 'battery',
          record: device('battery', id * 10 + 1, id, now, { soe: 50, powerDc: 100 }),
        },
      ],
      now,
      config.ingest.onlineWindowSeconds,
    );
    await seed.liveKey(key, { app: 7, installations: [installation(id)] });
    if (redis.status !== 'ready') await new Promise((resolve) => redis.once('ready', resolve));
  });
  afterAll(async () => {
    await app?.close();
    redis.disconnect();
    await dropPrefix(seedRedis, prefix);
    seedRedis.disconnect();
    await tracing?.stop();
  });
  beforeEach(() => {
    tracing.reset();
    tracing.sampled = true;
  });

  it('spans a read with its route, status, cache outcome and installation, never the path sent', async () => {
    // A key in the query too, as a careless client sends it: it must reach no attribute.
    const url = `${route}?installationId=${id}&apiKey=${key}`;
    const read = async () => {
      expect((await app.inject({ url, headers: { 'api-key': key } })).statusCode).toBe(200);
      return requestSpans().at(-1)?.attributes['read.cache'];
    };
    // The near-cache keeps an installation once it is read again (admission runs off the
    // request's path): read until one is answered from memory.
    expect(await read()).toBe('miss');
    await waitFor('a read answered from the near-cache', async () =>
      (await read()) === 'hit' ? true : undefined,
    );

    const spans = requestSpans();
    expect(spans.every((s) => s.name === `GET ${route}`)).toBe(true);
    expect(spans[0]?.attributes).toEqual({
      'http.request.method': 'GET',
      'http.route': route,
      'url.path': route,
      'http.response.status_code': 200,
      'read.cache': 'miss',
      'installation.id': id,
    });
    const text = allAttributeText(tracing.spans());
    expect(text).not.toContain(key);
    expect(text).not.toContain(hashApiKey(key));
  });

  it('keeps the request in context once a form body was read', async () => {
    const res = await app.inject({
      method: 'POST',
      url: route,
      headers: { 'api-key': key, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `installationId=${id}`,
    });
    expect(res.statusCode).toBe(200);
    const [span] = requestSpans();
    expect(span?.name).toBe(`POST ${route}`);
    expect(span?.attributes['installation.id']).toBe(id);
    expect(['hit', 'miss']).toContain(span?.attributes['read.cache']);
  });

  it("continues the caller's trace, and names no installation a refused caller asked for", async () => {
    const traceId = `${'a'.repeat(31)}1`;
    const spanId = `${'b'.repeat(15)}2`;
    const res = await app.inject({
      url: `${route}?installationId=${id}`,
      headers: { 'api-key': newApiKey(), traceparent: `00-${traceId}-${spanId}-01` },
    });
    expect(res.statusCode).toBe(401);
    const [span] = requestSpans();
    expect(span?.spanContext().traceId).toBe(traceId);
    expect(span?.parentSpanContext?.spanId).toBe(spanId);
    expect(span?.attributes['http.response.status_code']).toBe(401);
    expect(span?.attributes['installation.id']).toBeUndefined();
  });

  it('records nothing for a request the sampler drops', async () => {
    tracing.sampled = false;
    const res = await app.inject({
      url: `${route}?installationId=${id}`,
      headers: { 'api-key': key },
    });
    expect(res.statusCode).toBe(200);
    expect(tracing.spans()).toEqual([]);
  });
});
