--[[
  Writes a key's or an application's status record and announces it on the access channel, in
  the record's own slot, so a reader that hears the announcement reads the new record (on a
  cluster the node publishes after the write, and the bus carries it to every node).
  KEYS[1] keyStatus(hash) or appStatus(app)
  ARGV[1] channel   ARGV[2] message (`k:<hash>` or `a:<app>`)   ARGV[3...] field, value pairs
  (a handful, fixed by the caller)
  Returns 1.
]]
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
