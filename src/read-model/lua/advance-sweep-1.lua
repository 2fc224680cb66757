--[[
  Moves an application's sweep (every granted installation derived again, after its owner
  changed) past the chunk a pass derived, unless the sweep was restarted meanwhile.
  KEYS[1] internalOfApp(app,'sweep')   hash, seq -> the sweep's start, cursor -> SSCAN cursor
  ARGV[1] the seq the pass read   ARGV[2] the next cursor ('0': the sweep is done)
  Returns 1 when moved, 0 when restarted meanwhile.
]]
if redis.call('HGET', KEYS[1], 'seq') ~= ARGV[1] then return 0 end
if ARGV[2] == '0' then
  redis.call('DEL', KEYS[1])
else
  redis.call('HSET', KEYS[1], 'cursor', ARGV[2])
end
return 1
