--[[
  Sets or removes one API key's entry in an installation's acl, unless a recompute of a later
  generation already wrote it: access views are derived from the facts by recomputes that may
  run at once in several processes and be cut anywhere; each takes a generation first, so the
  latest one wins whatever order their writes land in. Announces the change in the same slot.
  KEYS[1] acl(id)                       hash, key hash -> expiresAt epoch ms ('0' = never)
  KEYS[2] internalOf(id, 'aclgen')      hash, key hash -> generation of the write that set it
  KEYS[3] changeChannel(id)             sharded channel: 'acl' is announced when changed
  ARGV[1] key hash   ARGV[2] expiresAt, or '' to remove the entry   ARGV[3] generation
  Returns 1 when written, 0 when a later generation stands.
]]
local stored = tonumber(redis.call('HGET', KEYS[2], ARGV[1]))
if stored and stored > tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
if ARGV[2] == '' then
  if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 1 end
else
  if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return 1 end
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
redis.call('SPUBLISH', KEYS[3], 'acl')
return 1
