--[[
  Leases a slice of an application's request budget for the current window (beyond.md §6).
  Budget is counted in tenths of a request (a 304 costs 1, any other answer 10).

  KEYS[1] quotaOf(applicationId)          hash: requestsPerMinute -> the application's override
  KEYS[2] quotaOf(applicationId, window)  string: tenths leased so far in this window

  ARGV[1] default requests per minute (config)
  ARGV[2] largest slice to lease, in tenths
  ARGV[3] milliseconds until the window ends (the counter's expiry, plus a margin)

  Returns { granted, limit, used }: tenths granted now (0 when the budget is spent), the
  window's budget in tenths, and tenths leased so far including this grant.
]]
local override = tonumber(redis.call('HGET', KEYS[1], 'requestsPerMinute') or '')
local limit = (override or tonumber(ARGV[1])) * 10
-- A twentieth of the budget per lease: replicas strand at most that much each per window.
local slice = math.max(10, math.min(tonumber(ARGV[2]), math.floor(limit / 20)))
local used = tonumber(redis.call('GET', KEYS[2]) or '0')
local granted = math.min(slice, limit - used)
if granted <= 0 then return { 0, limit, used } end
used = redis.call('INCRBY', KEYS[2], granted)
if used == granted then redis.call('PEXPIRE', KEYS[2], ARGV[3]) end
return { granted, limit, used }
