import type { Redis } from 'ioredis';
import { type Installation, serializeInstallation } from '../domain/installation.js';
import { deviceIndexKey } from './device-store.js';
import { flowScheduleKey } from './flow-store.js';
import type { ReadModelKeys } from './keys.js';
import { scriptedPipeline, withScripts } from './scripts.js';

// Installation records and their deletion. Upserts are last-writer-wins by occurredAt in Lua on
// the installation's own slot; a deletion also releases the device index entries that still
// point at it and takes it off the flow schedule.

export interface UpsertResult {
  readonly applied: boolean;
}

export interface DeleteResult {
  readonly applied: boolean;
}

export interface InstallationStore {
  upsert(
    installation: Installation,
    companyId: number | null,
    occurredAtMs: number,
  ): Promise<UpsertResult>;
  /** `occurredAtMs` null: a tombstone, which deletes whatever was applied. */
  remove(installationId: number, occurredAtMs: number | null): Promise<DeleteResult>;
}

export function createInstallationStore(deps: {
  conn: Redis;
  keys: ReadModelKeys;
}): InstallationStore {
  const conn = withScripts(deps.conn);
  const { keys } = deps;
  const gone = (id: number) => keys.internalOf(id, 'gone');
  return {
    async upsert(installation, companyId, occurredAtMs) {
      const id = installation.id;
      const applied = await conn.upsertInstallation(
        keys.installation(id),
        keys.installationMeta(id),
        gone(id),
        serializeInstallation(installation),
        occurredAtMs,
        companyId === null ? '' : String(companyId),
      );
      return { applied: applied === 1 };
    },
    async remove(id, occurredAtMs) {
      const reply = await conn.deleteInstallation(
        keys.installation(id),
        keys.installationMeta(id),
        keys.devices(id),
        keys.flow(id),
        keys.acl(id),
        gone(id),
        occurredAtMs === null ? '' : occurredAtMs,
      );
      if (reply[0] !== 1) return { applied: false };
      const [, deviceFields] = reply;
      const pipeline = scriptedPipeline(conn);
      for (const field of deviceFields) pipeline.releaseDevice(deviceIndexKey(keys, field), id);
      pipeline.zrem(flowScheduleKey(keys), String(id));
      const replies = (await pipeline.exec()) ?? [];
      const failed = replies.find(([error]) => error);
      if (failed?.[0]) throw failed[0];
      return { applied: true };
    },
  };
}
