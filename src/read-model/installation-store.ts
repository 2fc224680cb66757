import { type Installation, serializeInstallation } from '../domain/installation.js';
import { execOrThrow } from './exec.js';
import {
  changeChannel,
  deletionMarkerKey,
  deviceIndexKey,
  deviceTimesKey,
  pendingReleaseKey,
  type ReadModelKeys,
} from './keys.js';
import type { RedisClient } from './redis-connection.js';
import { scriptedPipeline, withScripts } from './scripts.js';

// Installation records and their deletion. Upserts are last-writer-wins by occurredAt in Lua on
// the installation's own slot; a deletion leaves a marker of its time (upserts and telemetry
// dated at or before it are ignored: a deletion wins a tie, whichever arrives first), bumps the installation's revision (the telemetry owner's copy is then
// reloaded) and releases the device index entries that still point at it.

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
  /**
   * `deletedAtMs`: the event's occurredAt, or for a tombstone (which deletes whatever was
   * applied) its Kafka timestamp.
   */
  remove(installationId: number, deletedAtMs: number, tombstone?: boolean): Promise<DeleteResult>;
}

export function createInstallationStore(deps: {
  conn: RedisClient;
  keys: ReadModelKeys;
  /** The sampled span writing, announced with the change (change-feed.ts); absent: untraced. */
  traceparent?: () => string | undefined;
}): InstallationStore {
  const conn = withScripts(deps.conn);
  const { keys } = deps;
  /** The scripts' last argument when traced and sampled: none at all otherwise. */
  const traced = (): string[] => {
    const traceparent = deps.traceparent?.();
    return traceparent === undefined ? [] : [traceparent];
  };
  return {
    async upsert(installation, companyId, occurredAtMs) {
      const id = installation.id;
      const applied = await conn.upsertInstallation(
        keys.installation(id),
        keys.installationMeta(id),
        deletionMarkerKey(keys, id),
        changeChannel(keys, id),
        serializeInstallation(installation),
        occurredAtMs,
        companyId === null ? '' : String(companyId),
        ...traced(),
      );
      return { applied: applied === 1 };
    },
    async remove(id, deletedAtMs, tombstone = false) {
      const [applied, pending] = await conn.deleteInstallation(
        keys.installation(id),
        keys.installationMeta(id),
        keys.devices(id),
        keys.flow(id),
        keys.acl(id),
        deletionMarkerKey(keys, id),
        pendingReleaseKey(keys, id),
        deviceTimesKey(keys, id),
        changeChannel(keys, id),
        deletedAtMs,
        tombstone ? 'tombstone' : 'event',
        ...traced(),
      );
      const pipeline = scriptedPipeline(conn);
      for (const field of pending) pipeline.releaseDevice(deviceIndexKey(keys, field), id);
      await execOrThrow(pipeline);
      // Only once every release succeeded: a failure above leaves the set for the retry.
      if (pending.length > 0) await conn.del(pendingReleaseKey(keys, id));
      return { applied: applied === 1 };
    },
  };
}
