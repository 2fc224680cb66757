--[[
  The device hashes of one installation, if the application may read it.

  KEYS[1] acl(installationId)          hash: applicationId -> generation, positive when allowed
  KEYS[2] installation(installationId) string: Installation JSON
  KEYS[3] devices(installationId)      hash: "<category>:<deviceId>" -> device JSON

  ARGV[1] the key's applicationId
  ARGV[2] now, epoch ms

  Returns nil when the application may not read it or the installation does not exist (one answer
  for both, on purpose), else the devices hash as a flat array field, value, field, value...
]]
-- @include access-check
return redis.call('HGETALL', KEYS[3])
