import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { type E2eStack, msUntil, startE2eStack } from '../e2e/support/e2e-stack.js';
import {
  apiKeyCreated,
  applicationUpserted,
  deviceState,
  grant,
  installationUpserted,
  membership,
} from '../e2e/support/events.js';
import { recordFigures } from '../support/figures.js';
import { openSse } from '../support-api/sse-client.js';

// The change feed end to end: telemetry and access changes produced to Kafka, projected by the
// real consumers, reach a warm near-cache and an open stream within the freshness bound (1 s).
describe('near-cache and stream behind the real consumers', () => {
  let stack: E2eStack;
  const key = newApiKey();
  const id = 701;
  const flowPath = `/getInstallationCurrentEnergyFlow?installationId=${id}`;
  const soe = async () => (await stack.call(flowPath, key)).body.data?.batterySoe;

  beforeAll(async () => {
    stack = await startE2eStack();
    const inst = installationUpserted(installation(id), null);
    await stack.produce('installations', inst.key, inst.event);
    for (const k of [
      applicationUpserted(71, { type: 'user', id: 7 }),
      apiKeyCreated('k71', 71, key),
      grant(true, 71, id),
      membership(true, 7, id),
    ]) {
      await stack.produce('access', k.key, k.event);
    }
    const t = deviceState(id, 'battery', 7011, Date.now() - 1_000, { soe: 10, powerDc: 5 });
    await stack.produce('telemetry', t.key, t.event);
    await msUntil('first flow', Date.now(), async () => (await soe()) === 10);
  });
  afterAll(() => stack?.stop());

  it('serves a produced change from a warm cache and pushes it within 1 s', async () => {
    for (let i = 0; i < 5; i++) await soe();
    const url = `${stack.origin}${stack.config.api.basePath}/streams/installationCurrentEnergyFlow?installationId=${id}`;
    const stream = await openSse(url, { 'api-key': key });
    try {
      expect(JSON.parse((await stream.next()).data).data.batterySoe).toBe(10);
      const t = deviceState(id, 'battery', 7011, Date.now() - 500, { soe: 20, powerDc: 5 });
      const since = Date.now();
      await stack.produce('telemetry', t.key, t.event);
      const ms = await msUntil('served', since, async () => (await soe()) === 20, 1_000);
      const event = await stream.next(1_000 - (Date.now() - since));
      expect(JSON.parse(event.data).data.batterySoe).toBe(20);
      recordFigures(
        'api-near-cache-consumer',
        `produce -> warm-cache answer ${ms} ms, -> event ${Date.now() - since} ms`,
      );
    } finally {
      stream.close();
    }
  });

  it('closes the stream with revoked within 1 s of the revocation being produced', async () => {
    const url = `${stack.origin}${stack.config.api.basePath}/streams/installationCurrentEnergyFlow?installationId=${id}`;
    const stream = await openSse(url, { 'api-key': key });
    await stream.next();
    const revoke = grant(false, 71, id);
    const since = Date.now();
    await stack.produce('access', revoke.key, revoke.event);
    await stream.closed(1_000);
    expect(stream.events.at(-1)?.event).toBe('revoked');
    expect((await stack.call(flowPath, key)).status).toBe(404);
    recordFigures('api-near-cache-consumer', `produce -> revoked ${Date.now() - since} ms`);
  });
});
