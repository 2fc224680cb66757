--[[
  Sets or removes installations in an application's view (getInstallations), each unless a
  write of a later generation already set it (see write-acl-entry-2.lua). Bounded by the
  caller's chunk; no list is unpacked.
  KEYS[1] appView(app)               sorted set, score installationId, member Installation JSON
  KEYS[2] internalOfApp(app,'viewgen') hash, installationId -> generation, negative when removed
  KEYS[3] internalOfApp(app,'viewver') counter, bumped when the view changed
  ARGV[1] generation, then pairs: installationId, Installation JSON or '' to remove it
  Returns the number of entries written.
]]
local gen = tonumber(ARGV[1])
local written, changed = 0, false
for i = 2, #ARGV, 2 do
  local id, json = ARGV[i], ARGV[i + 1]
  local stored = tonumber(redis.call('HGET', KEYS[2], id))
  if not stored or math.abs(stored) <= gen then
    local old = redis.call('ZRANGE', KEYS[1], id, id, 'BYSCORE')
    if json == '' then
      if #old > 0 then
        redis.call('ZREMRANGEBYSCORE', KEYS[1], id, id)
        changed = true
      end
      redis.call('HSET', KEYS[2], id, -gen)
    else
      if old[1] ~= json then
        if #old > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[1], id, id) end
        redis.call('ZADD', KEYS[1], id, json)
        changed = true
      end
      redis.call('HSET', KEYS[2], id, gen)
    end
    written = written + 1
  end
end
if changed then redis.call('INCR', KEYS[3]) end
return written
