import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { etagOf } from '../../api/http/etag.js';
import { changeChannel } from '../../src/read-model/keys.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { killSubscribers } from '../support/redis-monitor.js';
import { shardSubscribers } from '../support/shard-subscribers.js';
import { nextWholeSecond, redisUrl, testRedis, waitFor } from '../support/stack.js';
import { testApi } from '../support-api/api-harness.js';
import { startGatedProxy } from '../support-api/gated-proxy.js';
import { openSse, type SseStream } from '../support-api/sse-client.js';

// beyond.md §5, over real sockets against a read model written by the consumers' own stores:
// auth and params first as JSON, the first event, one event per change (by a write and by time
// alone), comments, Last-Event-ID, revocation within 1 s, the bound, one shared subscription.
describe('API energy-flow stream', () => {
  const WINDOW_S = 2;
  const api = testApi({
    env: {
      API_STREAM_HEARTBEAT_MS: '200',
      ONLINE_WINDOW_SECONDS: String(WINDOW_S),
      API_STREAMS_MAX: '6',
    },
  });
  const base = api.config.api.basePath;
  const owner = newApiKey();
  const stranger = newApiKey();
  const open: SseStream[] = [];
  let origin = '';
  let nextId = 300;

  const stream = async (query: string, headers: Record<string, string> = {}) => {
    const s = await openSse(`${origin}${base}/streams/installationCurrentEnergyFlow${query}`, {
      ...headers,
    });
    open.push(s);
    return s;
  };
  const single = async (id: number, key = owner) =>
    (
      await api.app.inject({
        url: `${base}/getInstallationCurrentEnergyFlow?installationId=${id}`,
        headers: { 'api-key': key },
      })
    ).body;
  const battery = (id: number, soe: number, lastSeenMs = Date.now()) =>
    api.seed.devices(
      id,
      // One device per installation: a device id is global, and seen elsewhere later it would move.
      [
        {
          category: 'battery',
          record: device('battery', id, id, lastSeenMs, { soe, powerDc: 100 }),
        },
      ],
      Date.now(),
      WINDOW_S,
    );
  /** A fresh installation the owner (a key of its own) may read, with one battery. */
  const readable = async (
    key = newApiKey(),
    options: { expiresAtMs?: number; batterySeenMs?: number } = {},
  ) => {
    const id = nextId++;
    await api.seed.installation(installation(id));
    const { batterySeenMs = Date.now() + 50_000, expiresAtMs } = options;
    await api.seed.liveKey(key, { app: id, installations: [installation(id)], expiresAtMs });
    await battery(id, 50, batterySeenMs);
    return { id, key };
  };

  beforeAll(async () => {
    await api.ready();
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    await api.seed.installation(installation(200));
    await api.seed.liveKey(owner, { app: 1, installations: [installation(200)] });
    await api.seed.liveKey(stranger, { app: 2, installations: [] });
    await battery(200, 50, Date.now() + 50_000);
  });
  afterEach(() => {
    for (const s of open.splice(0)) s.close();
  });
  afterAll(() => api.close());

  it('answers 401, 400 and 404 as JSON before any stream, exactly as the single endpoint', async () => {
    const cases: Array<[string, Record<string, string>, number, string]> = [
      ['?installationId=200', {}, 401, 'UNAUTHORIZED'],
      ['?installationId=200', { 'api-key': newApiKey() }, 401, 'UNAUTHORIZED'],
      ['?installationId=x', { 'api-key': newApiKey() }, 401, 'UNAUTHORIZED'],
      ['', { 'api-key': owner }, 400, 'MISSING_PARAMETERS'],
      ['?installationId=1.5', { 'api-key': owner }, 400, 'INVALID_PARAMETERS'],
      ['?installationId=200', { 'api-key': stranger }, 404, 'DOESNT_EXIST'],
      ['?installationId=999999', { 'api-key': stranger }, 404, 'DOESNT_EXIST'],
      ['?installationId=999999', { 'api-key': owner }, 404, 'DOESNT_EXIST'],
    ];
    for (const [query, headers, status, error] of cases) {
      const s = await stream(query, headers);
      expect(s.status, `${query} ${JSON.stringify(headers)}`).toBe(status);
      expect(s.headers['content-type']).toMatch(/^application\/json/);
      expect(s.body).toBe(`{"valid":false,"error":"${error}"}`);
    }
  });

  it('answers HEAD with the stream headers and no stream, after the same checks', async () => {
    const head = (key: string) =>
      api.app.inject({
        method: 'HEAD',
        url: `${base}/streams/installationCurrentEnergyFlow?installationId=200`,
        headers: { 'api-key': key },
      });
    const ok = await head(owner);
    expect(ok.statusCode).toBe(200);
    expect(ok.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(ok.body).toBe('');
    expect((await head(stranger)).statusCode).toBe(404);
    expect((await head(newApiKey())).statusCode).toBe(401);
  });

  it('sends the current flow first: the single endpoint body, its ETag as id', async () => {
    const s = await stream('?installationId=200', { 'api-key': owner });
    expect(s.status).toBe(200);
    expect(s.headers['content-type']).toMatch(/^text\/event-stream/);
    const first = await s.next();
    const body = await single(200);
    expect(first).toEqual({ event: 'energyFlow', id: etagOf(body), data: body });
  });

  it('sends one event per change of the served flow, equal to the single endpoint then', async () => {
    const { id, key } = await readable();
    const s = await stream(`?installationId=${id}`, { 'api-key': key });
    const first = await s.next();
    await battery(id, 70, Date.now() + 50_000);
    const second = await s.next();
    expect(second.data).not.toBe(first.data);
    expect(JSON.parse(second.data).data.batterySoe).toBe(70);
    expect(second.data).toBe(await single(id, key));
    expect(second.id).toBe(etagOf(second.data));
    // A write that leaves the served flow as it was sends nothing: the next event is the change.
    await api.seed.installation(installation(id, { name: 'renamed' }));
    await battery(id, 71, Date.now() + 50_000);
    expect(JSON.parse((await s.next()).data).data.batterySoe).toBe(71);
  });

  it('sends an event when a device goes offline by time alone', async () => {
    // Seen now: it counts for WINDOW_S seconds, then the flow loses it with no write at all.
    const { id, key } = await readable(newApiKey(), { batterySeenMs: nextWholeSecond() });
    const s = await stream(`?installationId=${id}`, { 'api-key': key });
    expect(JSON.parse((await s.next()).data).data.batterySoe).toBe(50);
    const offline = await s.next((WINDOW_S + 3) * 1000);
    expect(JSON.parse(offline.data).data).toBeNull();
    expect(offline.data).toBe(await single(id, key));
  });

  it('sends a comment line between events', async () => {
    const s = await stream('?installationId=200', { 'api-key': owner });
    await s.next();
    await waitFor('a comment', async () => (s.comments.length > 0 ? true : undefined), 3_000);
  });

  it('skips the first event when Last-Event-ID is the current ETag, not otherwise', async () => {
    const { id, key } = await readable();
    const tag = etagOf(await single(id, key));
    const resumed = await stream(`?installationId=${id}`, { 'api-key': key, 'last-event-id': tag });
    const stale = await stream(`?installationId=${id}`, { 'api-key': key, 'last-event-id': '"x"' });
    expect((await stale.next()).id).toBe(tag);
    await battery(id, 90, Date.now() + 50_000);
    const event = await resumed.next();
    expect(JSON.parse(event.data).data.batterySoe).toBe(90);
    expect(resumed.events).toHaveLength(1);
  });

  const revocations: Array<[string, (key: string, id: number) => Promise<void>]> = [
    ['the key is revoked', (key) => api.seed.revokeKey(key)],
    ['the grant is removed', (key, id) => api.seed.removeGrant(key, id)],
    ['the owner loses the installation', (key, id) => api.seed.removeMembership(key, id)],
    ['the application is disabled', (key) => api.seed.disableApplication(key)],
    ['the installation is deleted', (_key, id) => api.seed.deleteInstallation(id)],
  ];
  for (const [what, revoke] of revocations) {
    it(`sends revoked and closes within 1 s when ${what}`, async () => {
      const { id, key } = await readable();
      const s = await stream(`?installationId=${id}`, { 'api-key': key });
      await s.next();
      await revoke(key, id);
      const since = Date.now();
      await s.closed(1_000);
      expect(Date.now() - since).toBeLessThan(1_000);
      expect(s.events.at(-1)?.event).toBe('revoked');
    });
  }

  it('sends revoked when the key expires by time alone', async () => {
    const { id, key } = await readable(newApiKey(), { expiresAtMs: Date.now() + 1_500 });
    const s = await stream(`?installationId=${id}`, { 'api-key': key });
    await s.next();
    await s.closed(3_000);
    expect(s.events.at(-1)?.event).toBe('revoked');
  });

  it('shares one subscription among the streams of an installation', async () => {
    const { id, key } = await readable();
    const streams = [
      await stream(`?installationId=${id}`, { 'api-key': key }),
      await stream(`?installationId=${id}`, { 'api-key': key }),
    ];
    for (const s of streams) await s.next();
    const redis = testRedis();
    try {
      await redis.ping();
      expect(await shardSubscribers(redis, changeChannel(api.seed.keys, id))).toBe(1);
    } finally {
      redis.disconnect();
    }
    await battery(id, 12, Date.now() + 50_000);
    for (const s of streams) expect(JSON.parse((await s.next()).data).data.batterySoe).toBe(12);
  });

  it('answers TOO_MANY_STREAMS over the bound, after auth and access', async () => {
    const held = [];
    for (let i = 0; i < 6; i++)
      held.push(await stream('?installationId=200', { 'api-key': owner }));
    for (const s of held) expect(s.status).toBe(200);
    const over = await stream('?installationId=200', { 'api-key': owner });
    expect(over.status).toBe(503);
    expect(over.body).toBe('{"valid":false,"error":"TOO_MANY_STREAMS"}');
    expect(over.headers['retry-after']).toBe('5');
    expect((await stream('?installationId=200', { 'api-key': newApiKey() })).status).toBe(401);
    expect((await stream('?installationId=200', { 'api-key': stranger })).status).toBe(404);
    for (const s of held) s.close();
    await waitFor('a free slot', async () => {
      const s = await stream('?installationId=200', { 'api-key': owner });
      s.close();
      return s.status === 200 ? true : undefined;
    });
  });

  it('re-reads after the subscriber reconnects and sends what changed meanwhile', async () => {
    const { id, key } = await readable();
    const s = await stream(`?installationId=${id}`, { 'api-key': key });
    await s.next();
    // Killed: a write now is announced to nobody here; the reconnection must make up for it.
    expect(await killSubscribers(`changes:${api.seed.keys.internal('api')}`)).toBeGreaterThan(0);
    await battery(id, 5, Date.now() + 50_000);
    expect(JSON.parse((await s.next(5_000)).data).data.batterySoe).toBe(5);
  });
});

describe('API shutdown with open streams', () => {
  it('ends every open stream and closes', async () => {
    const api = testApi();
    const key = newApiKey();
    await api.ready();
    await api.seed.installation(installation(250));
    await api.seed.liveKey(key, { app: 1, installations: [installation(250)] });
    const origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    const s = await openSse(
      `${origin}${api.config.api.basePath}/streams/installationCurrentEnergyFlow?installationId=250`,
      { 'api-key': key },
    );
    await s.next();
    await api.close();
    await s.closed(1_000);
  });

  it('refuses a stream asked for during shutdown with the JSON envelope, and still closes', async () => {
    // The API reaches Redis through a proxy that holds its commands: the stream request is in
    // flight when close() begins, and goes on once they are let through.
    const proxy = await startGatedProxy(redisUrl());
    const api = testApi({ redisUrl: proxy.url });
    try {
      const key = newApiKey();
      await api.ready();
      await api.seed.installation(installation(251));
      await api.seed.liveKey(key, { app: 1, installations: [installation(251)] });
      const origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
      proxy.hold();
      const late = openSse(
        `${origin}${api.config.api.basePath}/streams/installationCurrentEnergyFlow?installationId=251`,
        { 'api-key': key },
      );
      await waitFor('the request read held at the proxy', async () =>
        proxy.pending > 0 ? true : undefined,
      );
      const closed = api.close();
      // The server stops listening after the preClose hooks ran: close() has begun.
      await waitFor('close() begun', async () => (api.app.server.listening ? undefined : true));
      proxy.release();
      const s = await late;
      expect(s.status).toBe(503);
      expect(s.body).toBe('{"valid":false,"error":"TOO_MANY_STREAMS"}');
      await Promise.race([
        closed,
        new Promise((_, reject) => setTimeout(() => reject(new Error('close hung')), 3_000)),
      ]);
    } finally {
      proxy.release();
      await proxy.close();
    }
  });
});
