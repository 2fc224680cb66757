--[[
  Deletes an installation with its devices, flow and acl. An event deletion is ignored when an
  upsert newer than it was applied, and leaves a marker so older upserts cannot resurrect it;
  a tombstone (ARGV[1] = '') deletes unconditionally and leaves no marker.
  KEYS[1] installation(id)   KEYS[2] installationMeta(id)   KEYS[3] devices(id)
  KEYS[4] flow(id)           KEYS[5] acl(id)                KEYS[6] internalOf(id, 'gone')
  ARGV[1] occurredAt epoch ms of the deletion event, or '' for a tombstone
  Returns { 1, { device fields it held } } when applied, { 0 } when older than the applied upsert.
]]
local occurred = tonumber(ARGV[1])
if occurred then
  local applied = tonumber(redis.call('HGET', KEYS[2], 'occurredAt'))
  if applied and occurred < applied then return { 0 } end
end
local devices = redis.call('HKEYS', KEYS[3])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5])
if occurred then
  local marker = tonumber(redis.call('GET', KEYS[6]))
  if not marker or occurred > marker then redis.call('SET', KEYS[6], ARGV[1]) end
else
  redis.call('DEL', KEYS[6])
end
return { 1, devices }
