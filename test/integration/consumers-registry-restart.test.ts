import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeEvent } from '../../src/registry/event-encoder.js';
import { createRegistryAdmin } from '../../src/registry/registry-admin.js';
import { registrySchemaFiles } from '../../src/registry/schema-files.js';
import { ownRegistry } from '../support/registry.js';
import { waitFor } from '../support/stack.js';
import { devicesOf, type Harness, iso, startHarness } from './support/consumer-harness.js';

// A schema registry stopped and started again while framed values keep arriving: the batch that
// needs a schema the consumers have not fetched yet waits (retried with backoff, nothing
// committed), and once the registry answers again every event is applied: 0 lost, 0
// dead-lettered. The registry is this file's own (its own port and data), so the other
// registry tests keep theirs.

const INSTALLATIONS = 20;
const PER_PHASE = 10; // events per installation before the stop, and again during the outage

let registry: Awaited<ReturnType<typeof ownRegistry>>;
let h: Harness;
const now = Date.now();
const schema = (name: string) => {
  const file = registrySchemaFiles().find((f) => f.format === 'avro' && f.entry.name === name);
  if (!file) throw new Error(`no avro schema ${name}`);
  return file.text;
};

beforeAll(async () => {
  registry = await ownRegistry();
  h = await startHarness('registry-restart', { env: { SCHEMA_REGISTRY_URL: registry.url } });
});
afterAll(async () => {
  await h?.stop();
  registry?.remove();
});

const sendPhase = async (category: 'battery' | 'energyMeter', id: number, phase: number) => {
  for (let n = 0; n < PER_PHASE; n++) {
    for (let inst = 9301; inst < 9301 + INSTALLATIONS; inst++) {
      const atMs = now - 60_000 + phase * 20_000 + n * 100;
      // A meter's first event carries its required `options`.
      const state = category === 'battery' ? { soe: n } : { powerAc: 100 + n, options: 'import' };
      const event = {
        type: 'device.state',
        installationId: inst,
        category,
        deviceId: inst * 10 + (category === 'battery' ? 1 : 2),
        observedAt: iso(atMs),
        state,
      };
      await h.send(h.config.topics.telemetry, String(inst), encodeEvent(event, 'avro', id));
    }
  }
};

describe('a schema registry restarted during ingest', () => {
  it('delays the batches that need it and loses nothing: every event applied, none dead-lettered', async () => {
    const admin = createRegistryAdmin(registry.url);
    const subject = (name: string) => `${h.config.topics.telemetry}-restart-${name}`;
    await admin.setCompatibility(subject('BatteryState'), 'BACKWARD');
    const batteryId = await admin.register(subject('BatteryState'), 'AVRO', schema('BatteryState'));
    await admin.setCompatibility(subject('EnergyMeterState'), 'BACKWARD');
    const meterId = await admin.register(
      subject('EnergyMeterState'),
      'AVRO',
      schema('EnergyMeterState'),
    );
    expect(meterId).not.toBe(batteryId);

    // Up: the battery schema is fetched and cached.
    await sendPhase('battery', batteryId, 0);
    await h.counted('ingest_events_applied_total', INSTALLATIONS * PER_PHASE, {
      topic: h.config.topics.telemetry,
    });

    // Down: values framed with the meter's id, which no consumer has fetched yet, then more
    // battery values behind them on the same partitions.
    registry.stop();
    const retriesBefore = await h.metric('ingest_batch_retries_total');
    await sendPhase('energyMeter', meterId, 1);
    await sendPhase('battery', batteryId, 2);
    // The consumers met the outage: their batch is being retried, not dead-lettered.
    await waitFor(
      'a batch retried while the registry is down',
      async () =>
        (await h.metric('ingest_batch_retries_total')) > retriesBefore ? true : undefined,
      30_000,
    );
    const meter = (inst: number) =>
      devicesOf(h, inst).then((d) => d[`energyMeter:${inst * 10 + 2}`]);
    expect(await meter(9301)).toBeUndefined();

    // Up again (same data, same ids): everything held back is applied, in log order.
    registry.start();
    await h.settled();
    for (let inst = 9301; inst < 9301 + INSTALLATIONS; inst++) {
      const devices = await devicesOf(h, inst);
      expect(devices[`energyMeter:${inst * 10 + 2}`], `meter of ${inst}`).toMatchObject({
        powerAc: 100 + PER_PHASE - 1,
      });
      expect(devices[`battery:${inst * 10 + 1}`], `battery of ${inst}`).toMatchObject({
        soe: PER_PHASE - 1,
        lastSeenDate: iso(now - 60_000 + 2 * 20_000 + (PER_PHASE - 1) * 100).replace(
          /\.\d+Z$/,
          '+00:00',
        ),
      });
    }
    expect(
      await h.metric('ingest_events_applied_total', { topic: h.config.topics.telemetry }),
    ).toBe(3 * INSTALLATIONS * PER_PHASE);
    // Every message is counted once handled; a rejected one would be dead-lettered.
    expect(await h.metric('ingest_messages_rejected_total')).toBe(0);
    expect(await h.deadLetters()).toEqual([]);
  });
});
