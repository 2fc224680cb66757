import type { ChainableCommander, Redis } from 'ioredis';
import { defineScripts, loadScript } from '../../src/read-model/lua-scripts.js';

// The API's Lua scripts, registered once per connection with defineCommand (ioredis sends
// EVAL on first use per socket, EVALSHA afterwards: one round trip either way).

const dir = new URL('../lua/', import.meta.url);
const SCRIPTS = {
  apiReadDevices: loadScript(dir, 'read-devices-3.lua', { readOnly: true }),
  apiReadFlow: loadScript(dir, 'read-flow-4.lua', { readOnly: true }),
} as const;

type Args = [...keys: string[], keyHash: string, nowMs: number];

/** A pipeline that knows the API's scripts. */
export interface ApiPipeline extends ChainableCommander {
  apiReadDevices(...args: Args): ApiPipeline;
  apiReadFlow(...args: Args): ApiPipeline;
}

export function defineApiScripts(redis: Redis): void {
  defineScripts(redis, SCRIPTS);
}

export function apiPipeline(redis: Redis): ApiPipeline {
  return redis.pipeline() as ApiPipeline;
}
