--[[
  The device hashes of one installation, if the key may read it.

  KEYS[1] acl(installationId)          hash: keyHash -> expiresAt epoch ms (0 = never)
  KEYS[2] installation(installationId) string: Installation JSON
  KEYS[3] devices(installationId)      hash: "<category>:<deviceId>" -> device JSON

  ARGV[1] keyHash (lower-case hex SHA-256 of the API key)
  ARGV[2] now, epoch ms

  Returns nil when the key has no live grant or the installation does not exist (one answer
  for both, on purpose), else the devices hash as a flat array field, value, field, value...
]]
-- @include access-check
return redis.call('HGETALL', KEYS[3])
