--[[
  Reads, in one call, what a telemetry batch needs of one installation: its deletion marker, the
  number of devices its devices hash holds, its stored flow inputs, and the records of the
  devices the batch touches (not the whole devices hash).
  KEYS[1] devices(id)                hash, field <category>:<deviceId> -> record JSON
  KEYS[2] internalOf(id, 'gone')     string, epoch ms of the latest deletion
  KEYS[3] internalOf(id, 'fi')       hash, field <category>:<deviceId> -> flow inputs
  ARGV    the device fields to read (may be none)
  Returns { marker or nil, devices count, { field, inputs, ... }, { record or nil, ... } }
]]
local records = {}
if #ARGV > 0 then records = redis.call('HMGET', KEYS[1], unpack(ARGV)) end
return {
  redis.call('GET', KEYS[2]),
  redis.call('HLEN', KEYS[1]),
  redis.call('HGETALL', KEYS[3]),
  records,
}
