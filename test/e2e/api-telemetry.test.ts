import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installation, newApiKey } from '../../tools/seed/records.js';
import { recordFigures } from '../support/figures.js';
import { nextWholeSecond } from '../support/stack.js';
import { type E2eStack, msUntil, startE2eStack } from './support/e2e-stack.js';
import {
  apiKeyCreated,
  applicationUpserted,
  deviceState,
  grant,
  installationUpserted,
  type Keyed,
  membership,
} from './support/events.js';

// Device telemetry produced to Kafka, read back over HTTP as devices and energy flow.
describe('e2e: telemetry through Kafka to the API', () => {
  let stack: E2eStack;
  const key = newApiKey();
  const id = 601;
  const telemetry = (k: Keyed) => stack.produce('telemetry', k.key, k.event);

  beforeAll(async () => {
    stack = await startE2eStack();
    const inst = installationUpserted(installation(id), null);
    await stack.produce('installations', inst.key, inst.event);
    for (const k of [
      applicationUpserted(30, { type: 'user', id: 9 }),
      apiKeyCreated('k', 30, key),
      grant(true, 30, id),
      membership(true, 9, id),
    ]) {
      await stack.produce('access', k.key, k.event);
    }
    await msUntil('access', Date.now(), async () => {
      return (await stack.call(`/getInstallationDevices?installationId=${id}`, key)).status === 200;
    });
  });
  afterAll(() => stack?.stop());

  it('serves produced devices by category and ascending id, and their energy flow', async () => {
    const now = Date.now() - 1_000;
    await telemetry(
      deviceState(id, 'battery', 12, now, {
        soe: 60,
        ratedEnergy: 5000,
        powerDc: 800,
        manufacturer: ' BYD ',
      }),
    );
    await telemetry(
      deviceState(id, 'battery', 11, now, { soe: 40, ratedEnergy: 5000, powerDc: -200 }),
    );
    await telemetry(
      deviceState(id, 'inverter', 1, now, { powerAc: 3000, powerDcPvTotal: 3500, status: 4 }),
    );
    await telemetry(deviceState(id, 'energyMeter', 2, now, { powerAc: 1000, options: '' }));
    const t0 = Date.now();
    const ms = await msUntil('devices served', t0, async () => {
      const r = await stack.call(`/getInstallationDevices?installationId=${id}`, key);
      return r.body.batteries?.length === 2 && r.body.energyMeters?.length === 1;
    });
    recordFigures('api-telemetry', `e2e telemetry propagation (produce -> API answer): ${ms} ms`);
    const devices = (await stack.call(`/getInstallationDevices?installationId=${id}`, key)).body;
    expect(devices.batteries.map((b: { id: number }) => b.id)).toEqual([11, 12]);
    expect(devices.batteries[1].manufacturer).toBe('BYD');
    expect(devices.inverters[0].status).toEqual({ rawValue: 4, name: 'MPPT' });
    expect(devices.inverters[0].lastSeenDate).toMatch(/\+00:00$/);

    await msUntil('flow served', Date.now(), async () => {
      const r = await stack.call(`/getInstallationCurrentEnergyFlow?installationId=${id}`, key);
      return r.body.data?.gridPower === -1000;
    });
    const flow = (await stack.call(`/getInstallationCurrentEnergyFlow?installationId=${id}`, key))
      .body;
    expect(flow.data).toMatchObject({
      inverterPower: 3000,
      solarPower: 3500,
      batteryPower: 600,
      batterySoe: 50,
      gridPower: -1000,
      housePower: 2000,
      evChargerPower: null,
      boilerPower: null,
    });
  });

  it('never serves an offline device in the flow, though it stays in the device list', async () => {
    const windowMs = stack.config.ingest.onlineWindowSeconds * 1000;
    // Seen just inside the window: offline 1-2 s from now without any further event (whole
    // seconds: what the truncation of a last-seen time leaves is never under 1 s).
    const edge = nextWholeSecond() - windowMs + 1_000;
    await telemetry(deviceState(id, 'boiler', 40, edge, { boilerMode: 'auto', powerAc: 700 }));
    await msUntil('boiler counted', Date.now(), async () => {
      const r = await stack.call(`/getInstallationCurrentEnergyFlow?installationId=${id}`, key);
      return r.body.data?.boilerPower === 700;
    });
    await msUntil('boiler dropped from the flow', Date.now(), async () => {
      const r = await stack.call(`/getInstallationCurrentEnergyFlow?installationId=${id}`, key);
      const counted = r.body.data?.boilerPower === 700;
      // The API's own guarantee: once the window has passed, the boiler is never counted.
      if (Date.now() > edge + windowMs + 1_000) expect(counted).toBe(false);
      return !counted;
    });
    const devices = (await stack.call(`/getInstallationDevices?installationId=${id}`, key)).body;
    expect(devices.boilers.map((b: { id: number }) => b.id)).toEqual([40]);
  });
});
