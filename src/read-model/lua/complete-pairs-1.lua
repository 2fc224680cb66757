--[[
  Removes derived entries from the pending set, each only if it was not recorded again since the
  pass read it (its score is unchanged).
  KEYS[1] internalOfApp(app,'pending')   sorted set, installationId -> generation when recorded
  ARGV pairs: installationId, the score the pass read
  Returns the number removed.
]]
local removed = 0
for i = 1, #ARGV, 2 do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) == ARGV[i + 1] then
    removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return removed
