import { readFileSync } from 'node:fs';
import type { RedisClient } from './redis-connection.js';

// The one loader of the project's Lua scripts. A script lives in `<dir>/<name>-<N>.lua`, N being
// its number of keys; a line `-- @include <piece>` is replaced by `<dir>/includes/<piece>.lua`.
// Files are read once, at module load of the caller; ioredis defineCommand then sends EVALSHA
// (EVAL on first use per connection, and after a restart flushed the script cache).
// A read-only script is declared so to Redis (`#!lua flags=no-writes`, Redis 7): Redis then
// runs it while writes are paused (CLIENT PAUSE WRITE, what FAILOVER does) and on a replica.
// ioredis still sends EVALSHA (not EVALSHA_RO); the flag is what Redis goes by.

export interface ScriptDefinition {
  readonly numberOfKeys: number;
  readonly lua: string;
  readonly readOnly?: boolean;
}

const INCLUDE = /^--\s*@include\s+([a-z0-9-]+)\s*$/gm;
const KEY_COUNT = /-(\d+)\.lua$/;

/** `dir`: a folder URL ending in `/`, e.g. `new URL('./lua/', import.meta.url)`. */
export function loadScript(
  dir: URL,
  file: string,
  options: { readonly readOnly?: boolean } = {},
): ScriptDefinition {
  const count = KEY_COUNT.exec(file);
  if (!count) throw new Error(`${file}: a Lua script's file name ends in -<number of keys>.lua`);
  const lua = readFileSync(new URL(file, dir), 'utf8').replace(INCLUDE, (_, piece: string) =>
    readFileSync(new URL(`includes/${piece}.lua`, dir), 'utf8').trimEnd(),
  );
  const flagged = options.readOnly ? `#!lua flags=no-writes\n${lua}` : lua;
  return { numberOfKeys: Number(count[1]), lua: flagged, ...options };
}

/** Registers the scripts as commands of the connection, once. */
export function defineScripts(
  redis: RedisClient,
  scripts: Readonly<Record<string, ScriptDefinition>>,
): void {
  for (const [name, definition] of Object.entries(scripts)) {
    if (!(name in redis)) redis.defineCommand(name, definition);
  }
}
