--[[
  Replaces one API key's view whole (or deletes it), unless a recompute of a later generation
  already wrote it (see write-acl-entry-3.lua).
  KEYS[1] keyView(hash)                 hash app, exp, i:<installationId> -> Installation JSON
  KEYS[2] keyViewGeneration(hash)       string, generation of the write that set the view
  ARGV[1] generation   ARGV[2...] the view's field, value pairs; none to delete the view
  Returns 1 when written, 0 when a later generation stands.
]]
local stored = tonumber(redis.call('GET', KEYS[2]))
if stored and stored > tonumber(ARGV[1]) then return 0 end
redis.call('SET', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[1])
if #ARGV > 1 then redis.call('HSET', KEYS[1], unpack(ARGV, 2)) end
return 1
