import type { ChainableCommander, Redis } from 'ioredis';
import { defineScripts, loadScript } from './lua-scripts.js';

// The consumers' Lua scripts (lua/), registered once per connection.

const dir = new URL('./lua/', import.meta.url);
const SCRIPTS = {
  upsertInstallation: loadScript(dir, 'upsert-installation-3.lua'),
  deleteInstallation: loadScript(dir, 'delete-installation-8.lua'),
  releaseDevice: loadScript(dir, 'release-device-1.lua'),
  claimDueFlows: loadScript(dir, 'claim-due-flows-1.lua'),
  readInstallation: loadScript(dir, 'read-installation-3.lua', { readOnly: true }),
} as const;

type Arg = string | number;

export interface ScriptCommands {
  upsertInstallation(k1: string, k2: string, k3: string, ...argv: Arg[]): Promise<number>;
  deleteInstallation(...keysAndArgv: Arg[]): Promise<[0 | 1, string[]]>;
  releaseDevice(key: string, installationId: Arg): Promise<number>;
  claimDueFlows(key: string, nowMs: Arg, leaseEndMs: Arg, limit: Arg): Promise<string[]>;
}

export type ScriptedRedis = Redis & ScriptCommands;

/** A pipeline of a scripted connection, with the scripts queued like any command. */
export type ScriptedPipeline = ChainableCommander & {
  releaseDevice(key: string, installationId: Arg): ChainableCommander;
  /** read-installation-3.lua: devices, gone, flow inputs keys, then the device fields. */
  readInstallation(k1: string, k2: string, k3: string, ...fields: string[]): ChainableCommander;
};

export const scriptedPipeline = (redis: ScriptedRedis): ScriptedPipeline =>
  redis.pipeline() as unknown as ScriptedPipeline;

export function withScripts(redis: Redis): ScriptedRedis {
  defineScripts(redis, SCRIPTS);
  return redis as ScriptedRedis;
}
