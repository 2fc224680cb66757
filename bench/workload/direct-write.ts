import type { Redis } from 'ioredis';
import { applyDeviceState, serializeDevice } from '../../src/domain/device-record.js';
import {
  computeEnergyFlow,
  type FlowDevice,
  serializeEnergyFlow,
} from '../../src/domain/energy-flow.js';
import { serializeInstallation } from '../../src/domain/installation.js';
import { writeEpoch } from '../../src/read-model/epoch.js';
import { encodeKeyExpiry, KEY_STATUS_VERSION } from '../../src/read-model/key-status-codec.js';
import { createKeys, deviceField } from '../../src/read-model/keys.js';
import { createInstallationProfile } from '../../tools/sim/installations.js';
import { fullState, stateEvent } from './device-state.js';
import type { Workload } from './plan.js';

// Writes the read model straight into Redis in the contract's format (src/read-model/keys.ts,
// records through the domain's own apply and serializers), without Kafka and without the
// consumer's bookkeeping: the way to build a million devices in bounded time.

/** The bench runs the API and consumers with ONLINE_WINDOW_SECONDS=3600 so the workload stays online. */
export const BENCH_ONLINE_WINDOW_SECONDS = 3_600;

export async function writeReadModel(
  redis: Redis,
  prefix: string,
  w: Workload,
  nowMs: number,
  onProgress?: (done: number) => void,
): Promise<void> {
  const keys = createKeys(prefix);
  const installationJson = new Map<number, string>();
  const CHUNK = 500;
  // Two chunks in flight: Node builds the next while Redis stores the previous.
  let inFlight: Promise<void> = Promise.resolve();
  for (let from = 1; from <= w.installationCount; from += CHUNK) {
    const pipeline = redis.pipeline();
    const to = Math.min(from + CHUNK - 1, w.installationCount);
    for (let id = from; id <= to; id++) {
      const json = serializeInstallation(createInstallationProfile(w.seed, id).installation);
      installationJson.set(id, json);
      pipeline.set(keys.installation(id), json);
      pipeline.hset(keys.installationMeta(id), {
        occurredAt: String(nowMs),
        companyId: String(w.companyOf(id)),
      });
      const fields: Record<string, string> = {};
      const flowDevices: FlowDevice[] = [];
      for (const device of w.devicesOf(id)) {
        const event = stateEvent(id, device, nowMs - 30_000, fullState(w.seed, device));
        const applied = applyDeviceState(null, event, { nowMs, futureSkewSeconds: 300 });
        if (applied.kind !== 'applied') throw new Error(`device ${device.deviceId} not applied`);
        fields[deviceField(device.category, device.deviceId)] = serializeDevice(
          device.category,
          applied.record,
        );
        flowDevices.push({ category: device.category, record: applied.record });
      }
      pipeline.hset(keys.devices(id), fields);
      const flow = computeEnergyFlow(flowDevices, nowMs, BENCH_ONLINE_WINDOW_SECONDS);
      pipeline.hset(keys.flow(id), {
        data: serializeEnergyFlow(flow.data),
        validUntil: String(flow.validUntilMs),
      });
    }
    await inFlight;
    inFlight = exec(pipeline).then(() => onProgress?.(to));
  }
  await inFlight;
  for (const app of w.apps) {
    const pipeline = redis.pipeline();
    const appId = app.applicationId;
    // What the consumers derive (src/read-model/access-store.ts): generation 1, allowed.
    const view: Array<string | number> = [];
    for (const id of app.installations) {
      view.push(id, installationJson.get(id) as string);
      pipeline.hset(keys.acl(id), String(appId), '1');
    }
    for (let i = 0; i < view.length; i += 1000)
      pipeline.zadd(keys.appView(appId), ...view.slice(i, i + 1000));
    pipeline.hset(keys.appStatus(appId), { enabled: '1', deleted: '0' });
    pipeline.hset(keys.keyStatus(app.key.keyHash), {
      app: String(appId),
      exp: encodeKeyExpiry(null),
      revoked: '0',
      v: KEY_STATUS_VERSION,
    });
    await exec(pipeline);
  }
  // Complete by construction: without the marker the API's /readyz answers 503 (model lost).
  await writeEpoch(redis, keys, nowMs, { complete: true });
}

async function exec(pipeline: ReturnType<Redis['pipeline']>): Promise<void> {
  const replies = (await pipeline.exec()) ?? [];
  const failed = replies.find(([error]) => error);
  if (failed?.[0]) throw failed[0];
}
