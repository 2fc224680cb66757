import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKeys, epochKey } from '../../src/read-model/keys.js';
import { loadScript } from '../../src/read-model/lua-scripts.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { monitorRedis, type RedisMonitor } from '../support/redis-monitor.js';
import { waitFor } from '../support/stack.js';
import { testApi } from '../support-api/api-harness.js';

// Issue 38: the near-cache never costs more than no cache. A miss is answered by the one read
// the request needs (the flow script for a flow), with no subscription; an installation is kept
// only once it is asked for a few times, and, when the cache is full, only if it is asked for more
// often than the entry it would evict (TinyLFU), so polling a fleet wider than the cache
// subscribes (almost) nothing; and the cache holds no more bytes than it is given.

const ENTRIES = 50;
const MAX_AGE_MS = 1_000;
const luaDir = new URL('../../api/lua/', import.meta.url);
/** The SHA1 a script runs under, from its file as the API loads it. */
const shaOf = (file: string) =>
  createHash('sha1')
    .update(loadScript(luaDir, file, { readOnly: true }).lua)
    .digest('hex');
/** The script a command runs (EVALSHA names it, EVAL sends it). */
const scriptOf = ([name, body]: unknown[]) =>
  /^evalsha$/i.test(String(name))
    ? String(body)
    : createHash('sha1').update(String(body)).digest('hex');

describe('API near-cache admission', () => {
  const api = testApi({ env: { API_NEAR_CACHE_ENTRIES: String(ENTRIES) } });
  const small = testApi({ env: { API_NEAR_CACHE_MAX_BYTES: '3000' } });
  const aging = testApi({ env: { API_NEAR_CACHE_MAX_AGE_MS: String(MAX_AGE_MS) } });
  const base = api.config.api.basePath;
  const key = newApiKey();
  // One per API: a read's commands are looked for under the prefix of the API that served it.
  const monitors = new Map<typeof api, RedisMonitor>();
  const hot = Array.from({ length: ENTRIES }, (_, i) => 7_000 + i);
  const cold = Array.from({ length: 4 * ENTRIES }, (_, i) => 8_000 + i);
  const flowPath = (id: number) => `${base}/getInstallationCurrentEnergyFlow?installationId=${id}`;
  const get = (id: number, on = api) =>
    on.app.inject({ url: flowPath(id), headers: { 'api-key': key } });
  const ignored = [api, small, aging].map((on) => epochKey(createKeys(on.prefix)));
  const commandsOf = async (request: () => Promise<unknown>, on = api) => {
    const monitor = monitors.get(on) as RedisMonitor;
    await monitor.take();
    await request();
    return (await monitor.take()).filter((args) => !ignored.some((k) => args.includes(k)));
  };
  const named = (commands: unknown[][], pattern: RegExp) =>
    commands.filter(([name]) => pattern.test(String(name)));
  /** Reads until one answer costs no Redis command: the installation is kept. */
  const kept = (id: number, on = api) =>
    waitFor(`installation ${id} kept`, async () =>
      (await commandsOf(() => get(id, on), on)).length === 0 ? true : undefined,
    );

  async function seed(on: typeof api, ids: number[]) {
    const nowMs = Date.now();
    const records = ids.map((id) => installation(id));
    for (const record of records) await on.seed.installation(record);
    for (const id of ids) {
      const battery = device('battery', id, id, nowMs, { soe: 50, powerDc: 10 });
      await on.seed.devices(id, [{ category: 'battery', record: battery }], nowMs, 300);
    }
    await on.seed.liveKey(key, { app: 1, installations: records });
  }

  beforeAll(async () => {
    await Promise.all([api.ready(), small.ready(), aging.ready()]);
    await seed(api, [...hot, ...cold]);
    await seed(small, hot.slice(0, 4));
    await seed(aging, hot.slice(0, 1));
    for (const on of [api, small, aging]) monitors.set(on, await monitorRedis(on.prefix));
  }, 60_000);
  afterAll(async () => {
    for (const monitor of monitors.values()) monitor.stop();
    await Promise.all([api.close(), small.close(), aging.close()]);
  });

  it('answers a first read with the flow script alone, and subscribes nothing', async () => {
    const id = cold[0] as number;
    const commands = await commandsOf(() => get(id));
    expect(named(commands, /^s?subscribe$/i)).toEqual([]);
    const scripts = named(commands, /^eval(sha)?$/i);
    expect(scripts).toHaveLength(1);
    // read-flow-4.lua: acl, installation, flow, devices (the devices only read once expired).
    expect(scripts[0]?.[2]).toBe('4');
    expect((await get(id)).statusCode).toBe(200);
  });

  it('keeps an installation asked for a few times, then serves it from memory', async () => {
    for (const id of hot) await kept(id);
  });

  it('barely subscribes while a fleet wider than the cache is polled round-robin', async () => {
    // A hot set polled all along, and a round-robin over four times as many others.
    const swept: unknown[][] = [];
    let next = 0;
    for (let round = 0; round < 2; round++)
      for (const id of cold.slice(1)) {
        swept.push(...(await commandsOf(() => get(id))));
        await get(hot[next++ % hot.length] as number);
      }
    const reads = 2 * (cold.length - 1);
    // One script per request, never a second read.
    expect(named(swept, /^eval(sha)?$/i)).toHaveLength(reads);
    // The sketch is approximate (a collision may overrate one), never a subscription per read.
    expect(named(swept, /^ssubscribe$/i).length).toBeLessThanOrEqual(reads / 50);
    // The hot set is still served from memory.
    for (const id of hot.slice(0, 5)) expect(await commandsOf(() => get(id))).toEqual([]);
  });

  it('answers an entry past its max age with the flow script, and keeps it again off the path', async () => {
    const id = hot[0] as number;
    await kept(id, aging);
    // The age is the entry's own clock (performance.now() at its fill): let it pass.
    await new Promise((resolve) => setTimeout(resolve, MAX_AGE_MS));
    let answer: Awaited<ReturnType<typeof get>> | undefined;
    const commands = await commandsOf(async () => {
      answer = await get(id, aging);
    }, aging);
    expect(answer?.statusCode).toBe(200);
    expect(answer?.json().data.batterySoe).toBe(50);
    // The request's read is the flow's, not the whole snapshot; so is the read that keeps it
    // again (if it came yet): a flow read keeps what the flow script answers.
    const scripts = named(commands, /^eval(sha)?$/i).map(scriptOf);
    expect(scripts.length).toBeGreaterThan(0);
    expect(scripts.every((sha) => sha === shaOf('read-flow-4.lua'))).toBe(true);
    await kept(id, aging);
  });

  it('keeps for a flow read the flow alone, and the devices once they are read', async () => {
    const id = hot[1] as number;
    const devices = () =>
      api.app.inject({
        url: `${base}/getInstallationDevices?installationId=${id}`,
        headers: { 'api-key': key },
      });
    await kept(id);
    // The flow is served from memory, the devices are not held: read from Redis.
    const first = await commandsOf(devices);
    expect(named(first, /^eval(sha)?$/i).length).toBeGreaterThan(0);
    // Kept with its devices once they are asked for a few times; then both from memory.
    await waitFor(`devices of ${id} kept`, async () =>
      (await commandsOf(devices)).length === 0 ? true : undefined,
    );
    expect((await devices()).json().batteries).toHaveLength(1);
    expect(await commandsOf(() => get(id))).toEqual([]);
  });

  it('holds no more bytes than it is given', async () => {
    const [a, b, c, d] = hot as [number, number, number, number];
    // ~700 B each (a battery and a flow, plus the entry's overhead): 3,000 B hold four at most.
    for (const id of [a, b, c, d]) await kept(id, small);
    const answers = [];
    for (const id of [a, b, c, d]) answers.push((await get(id, small)).statusCode);
    expect(answers).toEqual([200, 200, 200, 200]);
    const commands = await commandsOf(async () => {
      for (const id of [a, b, c, d]) await get(id, small);
    }, small);
    // Not all four fit: some of them are read from Redis again.
    expect(named(commands, /^evalsha$/i).length).toBeGreaterThan(0);
  });
});
