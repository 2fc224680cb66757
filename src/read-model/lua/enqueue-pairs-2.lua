--[[
  Records that the (application, installation) entries of these installations must be derived
  again, after a fact they depend on was written. Each is scored by a new generation, so a pass
  that read an entry before this call does not remove it (complete-pairs-1.lua).
  KEYS[1] internalOfApp(app,'pending')   sorted set, installationId -> generation when recorded
  KEYS[2] internalOfApp(app,'gen')       counter, the application's generations
  ARGV[1...] installationIds (a chunk the caller bounds)
  Returns the generation used.
]]
local gen = redis.call('INCR', KEYS[2])
for i = 1, #ARGV do redis.call('ZADD', KEYS[1], gen, ARGV[i]) end
return gen
