--[[
  What the near-cache holds of one installation (api/near-cache/), if the application may
  read it: the application's acl entry, the stored flow and the devices hash, in one call. The access
  check is the same as the other API scripts', so a refusal costs what it costs them.

  KEYS[1] acl(installationId)          hash: applicationId -> generation, positive when allowed
  KEYS[2] installation(installationId) string: Installation JSON
  KEYS[3] flow(installationId)         hash: data -> flow JSON or "null", validUntil -> epoch ms
  KEYS[4] devices(installationId)      hash: "<category>:<deviceId>" -> device JSON

  ARGV[1] the key's applicationId
  ARGV[2] now, epoch ms

  Returns nil when the application may not read it or the installation does not exist (one answer
  for both, on purpose), else { expiresAt, data, validUntil, field, value, ... } with the
  devices hash flat. A missing flow hash reads as "null", "0".
]]
-- @include access-check
local flow = redis.call('HMGET', KEYS[3], 'data', 'validUntil')
-- The entry as stored: tostring of a large number would print it in exponent form.
local result = { redis.call('HGET', KEYS[1], ARGV[1]), flow[1] or 'null', flow[2] or '0' }
local devices = redis.call('HGETALL', KEYS[4])
for i = 1, #devices do result[#result + 1] = devices[i] end
return result
