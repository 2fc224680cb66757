import type { Redis } from 'ioredis';
import { hashApiKey } from '../../src/domain/access-rule.js';
import type { DeviceCategory } from '../../src/domain/device-fields.js';
import { type DeviceRecord, serializeDevice } from '../../src/domain/device-record.js';
import {
  computeEnergyFlow,
  type FlowDevice,
  serializeEnergyFlow,
} from '../../src/domain/energy-flow.js';
import { type Installation, serializeInstallation } from '../../src/domain/installation.js';
import {
  createKeys,
  deviceField,
  installationField,
  type ReadModelKeys,
} from '../../src/read-model/keys.js';

// Writes the read model exactly as the contract (common brief) says the consumers do, with the
// domain serializers, so API tests need no Kafka.

export interface Seeder {
  readonly keys: ReadModelKeys;
  installation(record: Installation, companyId?: number | null): Promise<void>;
  deleteInstallation(id: number): Promise<void>;
  /** Stores the devices and the flow the consumer would precompute at `nowMs`. */
  devices(
    installationId: number,
    devices: ReadonlyArray<FlowDevice>,
    nowMs: number,
    onlineWindowSeconds: number,
  ): Promise<void>;
  /** A live key: key view with its installations, and an acl entry on each. */
  liveKey(
    apiKey: string,
    options: { app: number; expiresAtMs?: number; installations: readonly Installation[] },
  ): Promise<string>;
  /** Removes the key view only (what revocation or a disabled application leaves behind). */
  dropKeyView(apiKey: string): Promise<void>;
  /** Removes one grant: the acl entry and the view's installation field. */
  dropAcl(apiKey: string, installationId: number): Promise<void>;
}

export function createSeeder(redis: Redis, prefix: string): Seeder {
  const keys = createKeys(prefix);
  return {
    keys,
    async installation(record, companyId = null) {
      await redis
        .multi()
        .set(keys.installation(record.id), serializeInstallation(record))
        .hset(keys.installationMeta(record.id), {
          occurredAt: String(Date.now()),
          companyId: companyId === null ? '' : String(companyId),
        })
        .exec();
    },
    async deleteInstallation(id) {
      await redis.del(
        keys.installation(id),
        keys.installationMeta(id),
        keys.devices(id),
        keys.flow(id),
      );
    },
    async devices(installationId, devices, nowMs, onlineWindowSeconds) {
      const fields: Record<string, string> = {};
      for (const d of devices) {
        fields[deviceField(d.category, d.record.id as number)] = serializeDevice(
          d.category as DeviceCategory,
          d.record as DeviceRecord,
        );
      }
      const flow = computeEnergyFlow(devices, nowMs, onlineWindowSeconds);
      const tx = redis.multi().del(keys.devices(installationId));
      if (devices.length > 0) tx.hset(keys.devices(installationId), fields);
      await tx
        .hset(keys.flow(installationId), {
          data: serializeEnergyFlow(flow.data),
          validUntil: String(flow.validUntilMs),
        })
        .exec();
    },
    async liveKey(apiKey, { app, expiresAtMs = 0, installations }) {
      const hash = hashApiKey(apiKey);
      const view: Record<string, string> = { app: String(app), exp: String(expiresAtMs) };
      for (const inst of installations) {
        view[installationField(inst.id)] = serializeInstallation(inst);
      }
      const tx = redis.multi().del(keys.keyView(hash)).hset(keys.keyView(hash), view);
      for (const inst of installations) tx.hset(keys.acl(inst.id), hash, String(expiresAtMs));
      await tx.exec();
      return hash;
    },
    async dropKeyView(apiKey) {
      await redis.del(keys.keyView(hashApiKey(apiKey)));
    },
    async dropAcl(apiKey, installationId) {
      const hash = hashApiKey(apiKey);
      await redis
        .multi()
        .hdel(keys.acl(installationId), hash)
        .hdel(keys.keyView(hash), installationField(installationId))
        .exec();
    },
  };
}
