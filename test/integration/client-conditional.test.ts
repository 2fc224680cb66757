import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReadApiClient, type ReadApiClient } from '../../clients/typescript/src/index.js';
import { device, installation, newApiKey } from '../../tools/seed/records.js';
import { waitFor } from '../support/stack.js';
import { testApi } from '../support-api/api-harness.js';
import { recordingFetch } from './support/client-recorder.js';

// The official client against the real API: a second poll of an unchanged answer costs a 304
// and returns the cached body; a change is a 200 again; data age on every result.
describe('client: conditional reads and data age', () => {
  const api = testApi();
  const key = newApiKey();
  const id = 4101;
  const seenMs = Math.floor(Date.now() / 1000) * 1000 + 60_000;
  const recorder = recordingFetch();
  let client: ReadApiClient;

  const battery = (soe: number) =>
    api.seed.devices(
      id,
      [{ category: 'battery', record: device('battery', id, id, seenMs, { soe, powerDc: 10 }) }],
      Date.now(),
      api.config.ingest.onlineWindowSeconds,
    );

  beforeAll(async () => {
    await api.ready();
    const origin = await api.app.listen({ host: '127.0.0.1', port: 0 });
    await api.seed.installation(installation(id));
    await api.seed.liveKey(key, { app: 41, installations: [installation(id)] });
    await battery(50);
    client = createReadApiClient({
      baseUrl: `${origin}${api.config.api.basePath}`,
      apiKey: key,
      fetch: recorder.fetch,
    });
  });
  afterAll(() => api.close());

  it('answers the second poll of an unchanged flow from its cache after a 304', async () => {
    const first = await client.getEnergyFlow(id);
    expect(first.status).toBe(200);
    expect(first.body.data?.batterySoe).toBe(50);
    expect(first.etag).toMatch(/^"/);
    const second = await client.getEnergyFlow(id);
    expect(second).toMatchObject({ status: 304, notModified: true, etag: first.etag });
    expect(second.body).toEqual(first.body);
    const [one, two] = recorder.calls.slice(-2);
    expect(one).toMatchObject({ status: 200, ifNoneMatch: null });
    expect(two).toMatchObject({ status: 304, ifNoneMatch: first.etag });
  });

  it('gets the new body with a 200 once the flow changed', async () => {
    const before = await client.getEnergyFlow(id);
    await battery(75);
    const changed = await waitFor('the changed flow', async () => {
      const r = await client.getEnergyFlow(id);
      return r.body.data?.batterySoe === 75 ? r : undefined;
    });
    expect(changed.status).toBe(200);
    expect(changed.etag).not.toBe(before.etag);
    expect((await client.getEnergyFlow(id)).status).toBe(304);
  });

  it('reports the data age (Last-Modified) of flows and devices, none for installations', async () => {
    const flow = await client.getEnergyFlow(id);
    const devices = await client.getInstallationDevices(id);
    expect(flow.lastModified?.getTime()).toBe(seenMs);
    expect(devices.lastModified?.getTime()).toBe(seenMs);
    expect((await client.getInstallationDevices(id)).status).toBe(304);
    const list = await client.getInstallations();
    expect(list.body.installations.map((i) => i.id)).toEqual([id]);
    expect(list.lastModified).toBeNull();
  });

  it('throws the catalog error of a refusal, typed by its code', async () => {
    await expect(client.getEnergyFlow(999_999)).rejects.toMatchObject({
      name: 'ApiError',
      status: 404,
      code: 'DOESNT_EXIST',
      retriable: false,
    });
  });
});
