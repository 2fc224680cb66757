import type { Redis } from 'ioredis';
import { execOrThrow } from '../../src/read-model/exec.js';
import type { ReadModelKeys } from '../../src/read-model/keys.js';
import { parseInstallationField } from '../../src/read-model/keys.js';
import { isViewLive } from './access-check.js';
import { type ApiPipeline, apiPipeline, defineApiScripts } from './api-scripts.js';

// Every read the API makes, each in one Redis round trip: the key view (auth) and the
// installation's data (access + payload) travel in one pipeline.

export type Access<T> =
  | { readonly kind: 'unauthorized' }
  | { readonly kind: 'absent' }
  | { readonly kind: 'ok'; readonly value: T };

export interface StoredFlow {
  readonly data: string;
  readonly validUntilMs: number;
  /** Flat field/value pairs of the devices hash, only when the stored flow has expired. */
  readonly devices: readonly string[] | null;
}

export interface ApiReader {
  /** Whether the key is live at `nowMs` (used when parameters are bad: auth answers first). */
  keyLive(keyHash: string, nowMs: number): Promise<boolean>;
  /** Installation JSON strings of every installation the key may read, keyed by id. */
  installations(keyHash: string, nowMs: number): Promise<Access<Map<number, string>>>;
  devices(keyHash: string, id: number, nowMs: number): Promise<Access<readonly string[]>>;
  flow(keyHash: string, id: number, nowMs: number): Promise<Access<StoredFlow>>;
}

export function createApiReader(redis: Redis, keys: ReadModelKeys): ApiReader {
  defineApiScripts(redis);

  async function readWithView(
    keyHash: string,
    nowMs: number,
    add: (p: ApiPipeline) => void,
  ): Promise<{ live: boolean; payload: unknown }> {
    const pipeline = apiPipeline(redis);
    pipeline.hmget(keys.keyView(keyHash), 'app', 'exp');
    add(pipeline);
    const [view, payload] = await execOrThrow(pipeline);
    const [app, exp] = view as [string | null, string | null];
    return { live: isViewLive(app, exp, nowMs), payload };
  }

  return {
    async keyLive(keyHash, nowMs) {
      const [app, exp] = await redis.hmget(keys.keyView(keyHash), 'app', 'exp');
      return isViewLive(app ?? null, exp ?? null, nowMs);
    },

    async installations(keyHash, nowMs) {
      const view = await redis.hgetall(keys.keyView(keyHash));
      if (!isViewLive(view.app ?? null, view.exp ?? null, nowMs)) return { kind: 'unauthorized' };
      const byId = new Map<number, string>();
      for (const [field, json] of Object.entries(view)) {
        const id = parseInstallationField(field);
        if (id !== null) byId.set(id, json);
      }
      return { kind: 'ok', value: byId };
    },

    async devices(keyHash, id, nowMs) {
      const { live, payload } = await readWithView(keyHash, nowMs, (p) =>
        p.apiReadDevices(keys.acl(id), keys.installation(id), keys.devices(id), keyHash, nowMs),
      );
      if (!live) return { kind: 'unauthorized' };
      if (payload === null) return { kind: 'absent' };
      return { kind: 'ok', value: payload as string[] };
    },

    async flow(keyHash, id, nowMs) {
      const { live, payload } = await readWithView(keyHash, nowMs, (p) =>
        p.apiReadFlow(
          keys.acl(id),
          keys.installation(id),
          keys.flow(id),
          keys.devices(id),
          keyHash,
          nowMs,
        ),
      );
      if (!live) return { kind: 'unauthorized' };
      if (payload === null) return { kind: 'absent' };
      const [data, validUntil, ...devices] = payload as string[];
      const validUntilMs = Number(validUntil);
      const expired = validUntilMs !== 0 && validUntilMs < nowMs;
      return {
        kind: 'ok',
        value: { data: data ?? 'null', validUntilMs, devices: expired ? devices : null },
      };
    },
  };
}
