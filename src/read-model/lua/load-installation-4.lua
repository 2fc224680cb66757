--[[
  Reads what the owner of a telemetry partition keeps of one installation, on first sight:
  its deletion marker, its devices' precise times with its revision, its
  device records and its stored flow.
  KEYS[1] devices(id)                hash, field <category>:<deviceId> -> record JSON
  KEYS[2] internalOf(id, 'fi')       hash, field -> '<firstMs>;<lastMs>', '#rev' -> revision
  KEYS[3] internalOf(id, 'gone')     string, epoch ms of the latest deletion
  KEYS[4] flow(id)                   hash data, validUntil, v
  Returns { marker or nil, { fi field, value, ... }, { devices field, JSON, ... }, { data, validUntil } }
]]
return {
  redis.call('GET', KEYS[3]),
  redis.call('HGETALL', KEYS[2]),
  redis.call('HGETALL', KEYS[1]),
  redis.call('HMGET', KEYS[4], 'data', 'validUntil'),
}
