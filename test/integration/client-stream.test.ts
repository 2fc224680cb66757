import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ApiError,
  createReadApiClient,
  type EnergyFlowEvent,
  RevokedError,
} from '../../clients/typescript/src/index.js';
import { writeEpoch } from '../../src/read-model/epoch.js';
import { createSeeder } from '../../tools/seed/read-model-seed.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { startApiService, stopServices } from '../e2e/support/services.js';
import type { ServiceProcess } from '../faults/processes.js';
import { freePort } from '../support/free-port.js';
import { dropPrefix, isolatedEnv, testRedis, uniqueId, waitFor } from '../support/stack.js';
import { testApi } from '../support-api/api-harness.js';
import { recordingFetch } from './support/client-recorder.js';

// The official client's push iterator against the real API: it survives API process restarts
// (resuming with Last-Event-ID, never yielding an event twice) and ends with a RevokedError
// whenever the key may not read the installation: refused at the first request, at a reconnect,
// or told so on the stream.

/** The iterator's next event, or a failure after `ms`. */
const nextEvent = (it: AsyncIterator<EnergyFlowEvent>, ms = 20_000) =>
  Promise.race([
    it.next(),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`no event within ${ms} ms`)), ms).unref(),
    ),
  ]);
const soe = (r: IteratorResult<EnergyFlowEvent>) =>
  r.done ? undefined : r.value.body.data?.batterySoe;

describe('client: push across API restarts', () => {
  const id = uniqueId('client-stream');
  const env = isolatedEnv(id);
  const redis = testRedis();
  const seed = createSeeder(redis, env.REDIS_KEY_PREFIX as string);
  const key = newApiKey();
  const inst = 4301;
  let port = 0;
  let proc: ServiceProcess | undefined;

  const battery = (value: number) =>
    seed.devices(
      inst,
      [
        {
          category: 'battery',
          record: device('battery', inst, inst, Date.now() + 30_000, { soe: value, powerDc: 1 }),
        },
      ],
      Date.now(),
      300,
    );
  const restart = async (meanwhile: () => Promise<void> = async () => undefined) => {
    await stopServices(proc ? [proc] : []);
    await meanwhile();
    proc = await startApiService('client-stream-api', port, env);
  };

  beforeAll(async () => {
    port = await freePort();
    // The API is ready once the model is marked built (the consumers would write it).
    await writeEpoch(redis, seed.keys, Date.now(), { complete: true });
    await seed.installation(installation(inst));
    await seed.liveKey(key, { app: 43, installations: [installation(inst)] });
    await battery(50);
    proc = await startApiService('client-stream-api', port, env);
  });
  afterAll(async () => {
    await stopServices(proc ? [proc] : []);
    await dropPrefix(redis, env.REDIS_KEY_PREFIX as string);
    redis.disconnect();
  });

  it('resumes after each restart without a duplicate event, and ends when revoked meanwhile', async () => {
    const recorder = recordingFetch();
    let opens = 0;
    const client = createReadApiClient({
      baseUrl: `http://127.0.0.1:${port}/application/v1`,
      apiKey: key,
      fetch: recorder.fetch,
    });
    const it = client
      .streamEnergyFlow(inst, {
        backoff: { baseDelayMs: 100, maxDelayMs: 1_000 },
        onOpen: () => opens++,
      })
      [Symbol.asyncIterator]();
    const first = await nextEvent(it);
    expect(soe(first)).toBe(50);

    // Restart with a change while the API is down: the change, once.
    await restart(() => battery(60));
    const second = await nextEvent(it);
    expect(soe(second)).toBe(60);

    // Restart with no change: the server has nothing new to send; the next event is the next change.
    await restart();
    // The iterator reconnects while it is being read (a generator runs when pulled).
    const pending = nextEvent(it);
    await waitFor('the stream reopened', async () => (opens >= 3 ? true : undefined), 20_000);
    await battery(70);
    const third = await pending;
    expect(soe(third)).toBe(70);
    const ids = [first, second, third].map((r) => (r.done ? '' : r.value.id));
    expect(new Set(ids).size).toBe(3);
    // Each reconnect named the last event it had.
    const streams = recorder.calls.filter((c) => c.status === 200);
    expect(streams.map((c) => c.lastEventId)).toEqual([null, ids[0], ids[1]]);

    // Revoked while the API is down: the reconnect is refused, the iterator ends typed.
    await restart(() => seed.revokeKey(key));
    const ended = await nextEvent(it).catch((e: unknown) => e);
    expect(ended).toBeInstanceOf(RevokedError);
    expect(ended).toMatchObject({
      code: 'UNAUTHORIZED',
      installationId: inst,
      retriable: false,
      phase: 'reconnect',
    });
  });
});

describe('client: push revoked on the stream', () => {
  const api = testApi();
  let origin = '';

  beforeAll(async () => {
    await api.ready();
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => api.close());

  const cases: Array<[string, string, (key: string, id: number) => Promise<void>]> = [
    ['the key is revoked', 'UNAUTHORIZED', (key) => api.seed.revokeKey(key)],
    ['the grant is removed', 'DOESNT_EXIST', (key, id) => api.seed.removeGrant(key, id)],
  ];
  let nextId = 4310;
  for (const [what, code, revoke] of cases) {
    it(`ends the iterator with RevokedError ${code} when ${what}`, async () => {
      const inst = nextId++;
      const key = newApiKey();
      await api.seed.installation(installation(inst));
      await api.seed.liveKey(key, { app: inst, installations: [installation(inst)] });
      const client = createReadApiClient({
        baseUrl: `${origin}${api.config.api.basePath}`,
        apiKey: key,
      });
      const seen: EnergyFlowEvent[] = [];
      const done = (async () => {
        for await (const event of client.streamEnergyFlow(inst)) {
          seen.push(event);
          if (seen.length === 1) await revoke(key, inst);
        }
      })();
      const error = await done.catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RevokedError);
      expect(error).toMatchObject({ code, installationId: inst, phase: 'stream' });
      expect(seen).toHaveLength(1);
      expect(seen[0]?.lastModified).toBeNull(); // no device: no data age
    });
  }
});

describe('client: push refused when opened', () => {
  const api = testApi();
  let origin = '';
  const granted = 4320;
  const notGranted = 4321;

  beforeAll(async () => {
    await api.ready();
    origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    await api.seed.installation(installation(granted));
    await api.seed.installation(installation(notGranted));
  });
  afterAll(() => api.close());

  /** The first outcome of a stream opened with `key` on `id`, and the requests it made. */
  const open = async (key: string, id: number, basePath = api.config.api.basePath) => {
    const recorder = recordingFetch();
    let opens = 0;
    const client = createReadApiClient({
      baseUrl: `${origin}${basePath}`,
      apiKey: key,
      fetch: recorder.fetch,
    });
    const stream = client.streamEnergyFlow(id, { onOpen: () => opens++ });
    const error = await nextEvent(stream[Symbol.asyncIterator](), 10_000).catch((e: unknown) => e);
    return { error, opens, statuses: recorder.calls.map((c) => c.status) };
  };

  it('throws RevokedError UNAUTHORIZED at once for a key revoked before the stream opens', async () => {
    const key = newApiKey();
    await api.seed.liveKey(key, { app: 4320, installations: [installation(granted)] });
    await api.seed.revokeKey(key);
    const { error, opens, statuses } = await open(key, granted);
    expect(error).toBeInstanceOf(RevokedError);
    expect(error).toMatchObject({
      status: 401,
      code: 'UNAUTHORIZED',
      installationId: granted,
      phase: 'open',
      retriable: false,
    });
    expect(opens).toBe(0);
    expect(statuses).toEqual([401]); // one request: no reconnect is tried
  });

  it('throws RevokedError DOESNT_EXIST for an installation never granted, or missing', async () => {
    const key = newApiKey();
    await api.seed.liveKey(key, { app: 4321, installations: [installation(granted)] });
    for (const id of [notGranted, 4399]) {
      const { error, opens, statuses } = await open(key, id);
      expect(error).toBeInstanceOf(RevokedError);
      expect(error).toMatchObject({
        status: 404,
        code: 'DOESNT_EXIST',
        installationId: id,
        phase: 'open',
      });
      expect(opens).toBe(0);
      expect(statuses).toEqual([404]);
    }
  });

  it('keeps a wrong base URL a plain ApiError: no such route is no access refusal', async () => {
    const key = newApiKey();
    await api.seed.liveKey(key, { app: 4322, installations: [installation(granted)] });
    const { error } = await open(key, granted, '/application/v0');
    expect(error).toBeInstanceOf(ApiError);
    expect(error).not.toBeInstanceOf(RevokedError);
    expect(error).toMatchObject({ status: 404, code: 'NOT_FOUND' });
  });
});
