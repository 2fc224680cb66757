--[[
  Claims the flows whose validity ended: moves them to a score one lease ahead, so a concurrent
  sweeper (another consumer process) does not take them too. Recomputing a flow rewrites its
  score; a claim nobody completes comes due again when the lease ends.
  KEYS[1] internal('flow-due')   sorted set, member installationId, score validUntil (epoch ms)
  ARGV[1] now, epoch ms: members scored below it are due
  ARGV[2] lease end, epoch ms
  ARGV[3] the most members to claim
  Returns the claimed installationIds, oldest first.
]]
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
for _, id in ipairs(due) do redis.call('ZADD', KEYS[1], 'XX', ARGV[2], id) end
return due
