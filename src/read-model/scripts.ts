import { readFileSync } from 'node:fs';
import type { ChainableCommander, Redis } from 'ioredis';

// The Lua scripts of lua/, registered once per connection with defineCommand (EVALSHA, with a
// transparent EVAL fallback after a Redis restart flushed the script cache).

const lua = (name: string) => readFileSync(new URL(`./lua/${name}.lua`, import.meta.url), 'utf8');

const SCRIPTS = {
  upsertInstallation: { numberOfKeys: 3, lua: lua('upsert-installation-3') },
  deleteInstallation: { numberOfKeys: 6, lua: lua('delete-installation-6') },
  releaseDevice: { numberOfKeys: 1, lua: lua('release-device-1') },
} as const;

type Arg = string | number;

export interface ScriptCommands {
  upsertInstallation(k1: string, k2: string, k3: string, ...argv: Arg[]): Promise<number>;
  deleteInstallation(...keysAndArgv: Arg[]): Promise<[0] | [1, string[]]>;
  releaseDevice(key: string, installationId: Arg): Promise<number>;
}

export type ScriptedRedis = Redis & ScriptCommands;

/** A pipeline of a scripted connection, with the scripts queued like any command. */
export type ScriptedPipeline = ChainableCommander & {
  releaseDevice(key: string, installationId: Arg): ChainableCommander;
};

export const scriptedPipeline = (redis: ScriptedRedis): ScriptedPipeline =>
  redis.pipeline() as unknown as ScriptedPipeline;

export function withScripts(redis: Redis): ScriptedRedis {
  for (const [name, definition] of Object.entries(SCRIPTS)) {
    if (!(name in redis)) redis.defineCommand(name, definition);
  }
  return redis as ScriptedRedis;
}
