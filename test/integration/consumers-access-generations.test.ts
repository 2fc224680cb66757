import { afterAll, beforeAll, expect, it } from 'vitest';
import {
  aclGenerationKey,
  changeChannel,
  createKeys,
  keyViewGenerationKey,
} from '../../src/read-model/keys.js';
import { duplicateConnection, type RedisClient } from '../../src/read-model/redis-connection.js';
import { type ScriptedRedis, scriptedPipeline, withScripts } from '../../src/read-model/scripts.js';
import { dropPrefix, testRedis, uniqueId } from '../support/stack.js';

// Access views fan out (a key view and the acl entry of every installation it reads) as
// single-slot writes, each carrying its recompute's generation: whatever order two racing
// recomputes' writes land in, and wherever one is cut, the later recompute's result stands.

const prefix = `${uniqueId('accessgen')}:`;
const keys = createKeys(prefix);
let redis: RedisClient;
let conn: ScriptedRedis;

beforeAll(async () => {
  redis = testRedis();
  conn = withScripts(duplicateConnection(redis));
});
afterAll(async () => {
  conn?.disconnect();
  await dropPrefix(redis, prefix);
  redis?.disconnect();
});

const write = async (generation: number, hash: string, installations: number[]) => {
  const p = scriptedPipeline(conn);
  const view = [
    'app',
    '17',
    'exp',
    '0',
    ...installations.flatMap((i) => [`i:${i}`, `{"id":${i}}`]),
  ];
  for (const id of [1, 2])
    p.writeAclEntry(
      keys.acl(id),
      aclGenerationKey(keys, id),
      changeChannel(keys, id),
      hash,
      installations.includes(id) ? '0' : '',
      generation,
    );
  p.writeKeyView(keys.keyView(hash), keyViewGenerationKey(keys, hash), generation, ...view);
  return (await p.exec())?.map(([, v]) => v);
};

it('keeps the later recompute whatever order the writes land in', async () => {
  // Generation 2 (the grant of installation 2 removed) lands first; generation 1 arrives late.
  expect(await write(2, 'h1', [1])).toEqual([1, 1, 1]);
  expect(await write(1, 'h1', [1, 2])).toEqual([0, 0, 0]);
  expect(Object.keys(await redis.hgetall(keys.keyView('h1')))).toEqual(['app', 'exp', 'i:1']);
  expect(await redis.hget(keys.acl(2), 'h1')).toBeNull();
  expect(await redis.hget(keys.acl(1), 'h1')).toBe('0');
});

it('completes a fan-out cut half way when the recompute runs again', async () => {
  // Generation 3 wrote installation 1's acl entry, then the process died.
  const p = scriptedPipeline(conn);
  p.writeAclEntry(keys.acl(2), aclGenerationKey(keys, 2), changeChannel(keys, 2), 'h2', '0', 3);
  await p.exec();
  expect(await redis.exists(keys.keyView('h2'))).toBe(0);
  // The batch is retried: a new recompute, a new generation, every write again.
  expect(await write(4, 'h2', [1, 2])).toEqual([1, 1, 1]);
  expect(await redis.hget(keys.acl(1), 'h2')).toBe('0');
  expect(await redis.hget(keys.acl(2), 'h2')).toBe('0');
  expect(await redis.hget(keys.keyView('h2'), 'i:2')).toBe('{"id":2}');
});
