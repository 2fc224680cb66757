--[[
  The stored energy flow of one installation, if the application may read it.

  KEYS[1] acl(installationId)          hash: applicationId -> generation, positive when allowed
  KEYS[2] installation(installationId) string: Installation JSON
  KEYS[3] flow(installationId)         hash: data -> flow JSON or "null", validUntil -> epoch ms
  KEYS[4] devices(installationId)      hash: "<category>:<deviceId>" -> device JSON

  ARGV[1] the key's applicationId
  ARGV[2] now, epoch ms

  Returns nil when the application may not read it or the installation does not exist, else
  { data, validUntil } while the flow is valid (validUntil 0 or >= now), else
  { data, validUntil, field, value, ... } with the devices hash so the caller recomputes.
  A missing flow hash reads as { "null", "0" }.
]]
-- @include access-check
local flow = redis.call('HMGET', KEYS[3], 'data', 'validUntil')
local data = flow[1] or 'null'
local validUntil = flow[2] or '0'
local validMs = tonumber(validUntil) or 0
if validMs == 0 or validMs >= tonumber(ARGV[2]) then return { data, validUntil } end
local result = { data, validUntil }
local devices = redis.call('HGETALL', KEYS[4])
for i = 1, #devices do result[#result + 1] = devices[i] end
return result
