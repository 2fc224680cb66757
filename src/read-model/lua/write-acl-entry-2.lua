--[[
  Sets whether one application may read an installation, unless a write of a later generation
  already did: the (application, installation) entries are derived from the access facts by
  passes that may run at once in several processes and be cut anywhere; each takes the
  application's generation before it reads the facts, so the latest one wins whatever order the
  writes land in. Announces a change in the same slot.
  KEYS[1] acl(id)              hash, applicationId -> generation, negative when not allowed
  KEYS[2] changeChannel(id)    sharded channel: 'acl' is announced when the answer changed
  ARGV[1] applicationId   ARGV[2] generation (positive)   ARGV[3] '1' allowed, '0' not
  ARGV[4] (only when the write is traced and sampled) its W3C traceparent, announced as
          'acl <traceparent>'
  Returns 1 when written, 0 when a later generation stands.
]]
local gen = tonumber(ARGV[2])
local stored = tonumber(redis.call('HGET', KEYS[1], ARGV[1]))
if stored and math.abs(stored) > gen then return 0 end
local allowed = ARGV[3] == '1'
redis.call('HSET', KEYS[1], ARGV[1], allowed and gen or -gen)
if (stored ~= nil and stored > 0) ~= allowed then
  redis.call('SPUBLISH', KEYS[2], ARGV[4] and 'acl ' .. ARGV[4] or 'acl')
end
return 1
