import { readFileSync } from 'node:fs';
import type { ChainableCommander, Redis } from 'ioredis';

// The API's Lua scripts, registered once per connection with defineCommand (ioredis sends
// EVAL on first use per socket, EVALSHA afterwards: one round trip either way).

const lua = (file: string) => readFileSync(new URL(`../lua/${file}`, import.meta.url), 'utf8');

const SCRIPTS = {
  apiReadDevices: { numberOfKeys: 3, lua: lua('read-devices-3.lua'), readOnly: true },
  apiReadFlow: { numberOfKeys: 4, lua: lua('read-flow-4.lua'), readOnly: true },
} as const;

type Args = [...keys: string[], keyHash: string, nowMs: number];

/** A pipeline that knows the API's scripts. */
export interface ApiPipeline extends ChainableCommander {
  apiReadDevices(...args: Args): ApiPipeline;
  apiReadFlow(...args: Args): ApiPipeline;
}

export function defineApiScripts(redis: Redis): void {
  for (const [name, definition] of Object.entries(SCRIPTS)) {
    if (!(name in redis)) redis.defineCommand(name, definition);
  }
}

export function apiPipeline(redis: Redis): ApiPipeline {
  return redis.pipeline() as ApiPipeline;
}
