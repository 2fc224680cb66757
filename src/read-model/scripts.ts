import type { ChainableCommander } from 'ioredis';
import { defineScripts, loadScript } from './lua-scripts.js';
import type { RedisClient } from './redis-connection.js';
import { slotPipeline } from './slot-pipeline.js';

// The consumers' Lua scripts (lua/), registered once per connection.

const dir = new URL('./lua/', import.meta.url);
const SCRIPTS = {
  upsertInstallation: loadScript(dir, 'upsert-installation-4.lua'),
  deleteInstallation: loadScript(dir, 'delete-installation-9.lua'),
  releaseDevice: loadScript(dir, 'release-device-1.lua'),
  loadInstallation: loadScript(dir, 'load-installation-4.lua', { readOnly: true }),
  writeInstallation: loadScript(dir, 'write-installation-4.lua'),
  claimDevice: loadScript(dir, 'claim-device-1.lua'),
  writeAclEntry: loadScript(dir, 'write-acl-entry-2.lua'),
  writeViewEntries: loadScript(dir, 'write-view-entries-3.lua'),
  writeStatus: loadScript(dir, 'write-status-1.lua'),
  enqueuePairs: loadScript(dir, 'enqueue-pairs-2.lua'),
  completePairs: loadScript(dir, 'complete-pairs-1.lua'),
  advanceSweep: loadScript(dir, 'advance-sweep-1.lua'),
} as const;

type Arg = string | number;

export interface ScriptCommands {
  upsertInstallation(
    k1: string,
    k2: string,
    k3: string,
    k4: string,
    ...argv: Arg[]
  ): Promise<number>;
  deleteInstallation(...keysAndArgv: Arg[]): Promise<[0 | 1, string[]]>;
  releaseDevice(key: string, installationId: Arg): Promise<number>;
  /** enqueue-pairs-2.lua: pending, generation counter; installationIds. Returns the generation. */
  enqueuePairs(k1: string, k2: string, ...ids: Arg[]): Promise<number>;
  /** complete-pairs-1.lua: pending; installationId, score pairs. */
  completePairs(key: string, ...pairs: Arg[]): Promise<number>;
  /** advance-sweep-1.lua: sweep; seq, next cursor. */
  advanceSweep(key: string, seq: Arg, cursor: Arg): Promise<number>;
}

export type ScriptedRedis = RedisClient & ScriptCommands;

/** A pipeline of a scripted connection, with the scripts queued like any command. */
export type ScriptedPipeline = ChainableCommander & {
  releaseDevice(key: string, installationId: Arg): ChainableCommander;
  /** load-installation-4.lua: devices, device times, gone, flow. */
  loadInstallation(k1: string, k2: string, k3: string, k4: string): ChainableCommander;
  /**
   * write-installation-4.lua: devices, device times, flow, change channel, then its ARGV as one
   * array: ioredis flattens it once, where a spread would copy it once more.
   */
  writeInstallation(
    k1: string,
    k2: string,
    k3: string,
    k4: string,
    argv: readonly Arg[],
  ): ChainableCommander;
  /**
   * write-acl-entry-2.lua: acl, change channel; applicationId, generation, '1' or '0', and the
   * writing span's traceparent only when traced and sampled.
   */
  writeAclEntry(
    k1: string,
    k2: string,
    app: Arg,
    gen: Arg,
    allowed: Arg,
    traceparent?: string,
  ): ChainableCommander;
  /** write-view-entries-3.lua: view, its generations, its version; generation, id, JSON, … */
  writeViewEntries(k1: string, k2: string, k3: string, argv: readonly Arg[]): ChainableCommander;
  /** write-status-1.lua: the status record; channel, message, then field, value pairs. */
  writeStatus(key: string, ...argv: Arg[]): ChainableCommander;
  enqueuePairs(k1: string, k2: string, ...ids: Arg[]): ChainableCommander;
  /** claim-device-1.lua: the device's index key, 'claim' or 'remove', installationId, epoch ms. */
  claimDevice(key: string, kind: string, installationId: Arg, atMs: Arg): ChainableCommander;
};

/** Spanning installations is fine: on a cluster it runs as one pipeline per node. */
export const scriptedPipeline = (redis: ScriptedRedis): ScriptedPipeline =>
  slotPipeline<ScriptedPipeline>(redis);

export function withScripts(redis: RedisClient): ScriptedRedis {
  defineScripts(redis, SCRIPTS);
  return redis as ScriptedRedis;
}
