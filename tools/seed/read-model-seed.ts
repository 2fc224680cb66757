import { hashApiKey } from '../../src/domain/access-rule.js';
import { DEVICE_FIELDS } from '../../src/domain/device-fields.js';
import type { DeviceValue } from '../../src/domain/device-record.js';
import type { FlowDevice } from '../../src/domain/energy-flow.js';
import type { AccessEvent, DeviceStateEvent, IngestValue } from '../../src/domain/events.js';
import type { Installation } from '../../src/domain/installation.js';
import {
  addPair,
  createAccessFactStore,
  noEffects,
} from '../../src/read-model/access-fact-store.js';
import { createAccessWork } from '../../src/read-model/access-store.js';
import { createInstallationStore } from '../../src/read-model/installation-store.js';
import { createKeys, type ReadModelKeys } from '../../src/read-model/keys.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';
import { createTelemetryStore, mapCache } from '../../src/read-model/telemetry-store.js';
import { untraced } from '../../src/tracing/pass-trace.js';

// Seeds the read model through the consumers' own stores and batch planner, as the projectors
// call them (without Kafka), so API tests read exactly the layout the consumers write.

export interface Seeder {
  readonly keys: ReadModelKeys;
  /** An installation upsert, then the access views of the applications granted it. */
  installation(record: Installation, companyId?: number | null): Promise<void>;
  deleteInstallation(id: number): Promise<void>;
  /**
   * One telemetry batch at `nowMs`: per device, a state event at its firstSeenDate and one at
   * its lastSeenDate, so the stored record equals the given one. `traceparent`: written as a
   * sampled span's write is, announcing that context with the change.
   */
  devices(
    installationId: number,
    devices: ReadonlyArray<FlowDevice>,
    nowMs: number,
    onlineWindowSeconds: number,
    traceparent?: string,
  ): Promise<void>;
  /**
   * A live key: its application (user-owned, enabled), the key, a grant and the owner's
   * membership per installation (seed the installations first), then the views.
   */
  liveKey(
    apiKey: string,
    options: {
      app: number;
      /** Any instant, the epoch and before it too; absent or null: never expires. */
      expiresAtMs?: number | null;
      installations: readonly Installation[];
    },
  ): Promise<string>;
  revokeKey(apiKey: string): Promise<void>;
  /** Removes the grant of the key's application for one installation. */
  removeGrant(apiKey: string, installationId: number): Promise<void>;
  /** Removes the owner's membership of one installation (the key's application keeps its grant). */
  removeMembership(apiKey: string, installationId: number): Promise<void>;
  /** Upserts the key's application as disabled. */
  disableApplication(apiKey: string): Promise<void>;
  deleteApplication(apiKey: string): Promise<void>;
  /** Re-creates the key's keyId with another key (a new hash): the old key stops working. */
  rotateKey(apiKey: string, newApiKey: string): Promise<void>;
}

export function createSeeder(redis: RedisClient, prefix: string): Seeder {
  const keys = createKeys(prefix);
  const installations = createInstallationStore({ conn: redis, keys });
  const facts = createAccessFactStore({ conn: redis, keys });
  const work = createAccessWork({ conn: redis, keys });
  // The seeder's own work place: what the consumers' worker does, run to the end at once.
  const place = { topic: `seed-${prefix}`, partition: 0 };
  async function record(effects: Parameters<typeof work.record>[0]): Promise<void> {
    await work.record(effects, place);
    while ((await work.workOnce([place])) > 0);
  }
  const appOfKey = new Map<string, number>();
  // Facts and upserts need increasing occurredAt; the wall clock may repeat within a test.
  let lastMs = Date.now();
  const occurred = () => {
    lastMs = Math.max(lastMs + 1, Date.now());
    return lastMs;
  };
  const at = () => new Date(occurred()).toISOString();
  const keyIdOf = (hash: string) => `key-${hash.slice(0, 16)}`;
  const appOf = (apiKey: string) => {
    const app = appOfKey.get(apiKey);
    if (app === undefined) throw new Error('a key this seeder did not create');
    return app;
  };

  async function applyFacts(events: readonly AccessEvent[]): Promise<void> {
    await record(await facts.applyAll(events));
  }

  async function recomputeGranted(installationId: number): Promise<void> {
    const [apps = []] = await work.applicationsGranted([installationId]);
    const effects = noEffects();
    for (const app of apps) addPair(effects, app, installationId);
    await record(effects);
  }

  return {
    keys,
    async installation(record, companyId = null) {
      const { applied } = await installations.upsert(record, companyId, occurred());
      if (!applied) throw new Error(`installation ${record.id} upsert not applied`);
      await recomputeGranted(record.id);
    },
    async deleteInstallation(id) {
      await installations.remove(id, occurred());
      await recomputeGranted(id);
    },
    async devices(installationId, devices, nowMs, onlineWindowSeconds, traceparent) {
      const events = devices.flatMap((d) => stateEvents(installationId, d));
      // The consumers' write path, without Kafka: seeded devices never move.
      const store = createTelemetryStore({
        conn: redis,
        keys,
        cache: mapCache(),
        sendReleases: async () => {},
        ...(traceparent === undefined
          ? {}
          : { trace: { ...untraced, traceparent: () => traceparent } }),
      });
      const pass = await store.pass(events, { nowMs, futureSkewSeconds: 60, onlineWindowSeconds });
      const refused = pass.outcomes.find((o) => o?.kind === 'rejected');
      if (refused) throw new Error(`seed telemetry refused: ${JSON.stringify(refused)}`);
    },
    async liveKey(apiKey, { app, expiresAtMs = null, installations: granted }) {
      const hash = hashApiKey(apiKey);
      appOfKey.set(apiKey, app);
      const userId = 1_000_000 + app;
      await applyFacts([
        {
          type: 'application.upserted',
          occurredAt: at(),
          applicationId: app,
          owner: { type: 'user', id: userId },
          enabled: true,
        },
        {
          type: 'apiKey.created',
          occurredAt: at(),
          keyId: keyIdOf(hash),
          applicationId: app,
          keyHash: hash,
          expiresAt: expiresAtMs === null ? null : new Date(expiresAtMs).toISOString(),
        },
        ...granted.flatMap((inst): AccessEvent[] => [
          { type: 'membership.added', occurredAt: at(), userId, installationId: inst.id },
          { type: 'grant.added', occurredAt: at(), applicationId: app, installationId: inst.id },
        ]),
      ]);
      return hash;
    },
    async revokeKey(apiKey) {
      await applyFacts([
        { type: 'apiKey.revoked', occurredAt: at(), keyId: keyIdOf(hashApiKey(apiKey)) },
      ]);
    },
    async removeGrant(apiKey, installationId) {
      const app = appOf(apiKey);
      await applyFacts([
        { type: 'grant.removed', occurredAt: at(), applicationId: app, installationId },
      ]);
    },
    async removeMembership(apiKey, installationId) {
      const userId = 1_000_000 + appOf(apiKey);
      await applyFacts([{ type: 'membership.removed', occurredAt: at(), userId, installationId }]);
    },
    async disableApplication(apiKey) {
      const app = appOf(apiKey);
      await applyFacts([
        {
          type: 'application.upserted',
          occurredAt: at(),
          applicationId: app,
          owner: { type: 'user', id: 1_000_000 + app },
          enabled: false,
        },
      ]);
    },
    async deleteApplication(apiKey) {
      await applyFacts([
        { type: 'application.deleted', occurredAt: at(), applicationId: appOf(apiKey) },
      ]);
    },
    async rotateKey(apiKey, newApiKey) {
      const app = appOf(apiKey);
      const newHash = hashApiKey(newApiKey);
      appOfKey.set(newApiKey, app);
      await applyFacts([
        {
          type: 'apiKey.created',
          occurredAt: at(),
          keyId: keyIdOf(hashApiKey(apiKey)),
          applicationId: app,
          keyHash: newHash,
          expiresAt: null,
        },
      ]);
    },
  };
}

/** The telemetry that produces `device.record`: its producer fields, first then last seen. */
function stateEvents(installationId: number, device: FlowDevice): DeviceStateEvent[] {
  const { category, record } = device;
  const state: Record<string, IngestValue> = {};
  for (const spec of DEVICE_FIELDS[category]) {
    if (spec.owned) continue;
    state[spec.name] = ingestValue(record[spec.name] as DeviceValue);
  }
  return [record.firstSeenDate, record.lastSeenDate].map((observedAt) => ({
    type: 'device.state',
    installationId,
    category,
    deviceId: record.id as number,
    observedAt: String(observedAt),
    state,
  }));
}

/** The inverter status travels as its SunSpec number; every other value as stored. */
function ingestValue(value: DeviceValue | undefined): IngestValue {
  if (value === undefined) return null;
  if (value !== null && typeof value === 'object' && 'rawValue' in value) return value.rawValue;
  return value;
}
