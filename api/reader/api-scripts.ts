import { Command } from 'ioredis';
import type { ReadModelKeys } from '../../src/read-model/keys.js';
import { defineScripts, loadScript } from '../../src/read-model/lua-scripts.js';
import type { RedisClient } from '../../src/read-model/redis-connection.js';

// The API's Redis commands: its Lua scripts, registered once per connection with defineCommand
// (ioredis sends EVAL on first use per socket, EVALSHA afterwards: one round trip either way),
// and HGETALL as the flat reply Redis sends. The `…Buffer` variants answer the stored bytes
// undecoded, so a body is built from them without a UTF-8 decode and re-encode.

const dir = new URL('../lua/', import.meta.url);
const SCRIPTS = {
  apiReadDevices: loadScript(dir, 'read-devices-3.lua', { readOnly: true }),
  apiReadFlow: loadScript(dir, 'read-flow-4.lua', { readOnly: true }),
  apiReadSnapshot: loadScript(dir, 'read-snapshot-4.lua', { readOnly: true }),
  apiReadViewPage: loadScript(dir, 'read-view-page-2.lua', { readOnly: true }),
} as const;

type Args = [...keys: string[], applicationId: number, nowMs: number];

export type ApiRedis = RedisClient & {
  apiReadDevicesBuffer(...args: Args): Promise<Buffer[] | null>;
  apiReadFlow(...args: Args): Promise<string[] | null>;
  apiReadFlowBuffer(...args: Args): Promise<Buffer[] | null>;
  apiReadSnapshotBuffer(...args: Args): Promise<Buffer[] | null>;
  /** The view's version (empty when none), then JSON, id pairs of one page in id order. */
  apiReadViewPageBuffer(
    view: string,
    version: string,
    after: string,
    limit: number,
  ): Promise<Buffer[]>;
};

/** KEYS of the flow and snapshot scripts, in their order; the first (acl) routes the read. */
export const flowScriptKeys = (keys: ReadModelKeys, id: number) =>
  [keys.acl(id), keys.installation(id), keys.flow(id), keys.devices(id)] as const;

export function withApiScripts(redis: RedisClient): ApiRedis {
  defineScripts(redis, SCRIPTS);
  return redis as ApiRedis;
}

/** ioredis turns an HGETALL reply into an object (a cost per field); this keeps Redis's array. */
class FlatReplyCommand extends Command {
  override transformReply(result: Buffer | Buffer[]): Buffer | Buffer[] {
    return result;
  }
}

/** HGETALL as `[field, value, field, value, …]` Buffers; `[]` for a missing hash. */
export function hgetallFlat(redis: RedisClient, key: string): Promise<Buffer[]> {
  return redis.sendCommand(new FlatReplyCommand('hgetall', [key])) as Promise<Buffer[]>;
}
