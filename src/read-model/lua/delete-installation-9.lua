--[[
  Deletes an installation with its devices, flow and acl, and records when, so that upserts and
  telemetry dated at or before it cannot resurrect it. A deletion event is ignored when an upsert
  newer than it was applied (one at the same instant is deleted: the deletion wins the tie, as
  in upsert-installation-4.lua); a tombstone deletes unconditionally. The device fields removed are
  kept in a set until their index entries are released (the caller deletes it then), so a retry
  after a failed release still finds them.
  KEYS[1] installation(id)   KEYS[2] installationMeta(id)   KEYS[3] devices(id)
  KEYS[4] flow(id)           KEYS[5] acl(id)
  KEYS[6] internalOf(id, 'gone')      string, epoch ms of the latest deletion
  KEYS[7] internalOf(id, 'release')   set, device fields whose index entries await release
  KEYS[8] internalOf(id, 'fi')        hash, the devices' precise times (goes with the devices)
                                      and '#rev', the revision: bumped, so the telemetry owner's
                                      in-memory copy is refused and reloaded
  KEYS[9] changeChannel(id)           sharded channel: 'deleted' is announced when applied
  ARGV[1] epoch ms of the deletion (the event's occurredAt, or the tombstone's Kafka timestamp)
  ARGV[2] 'event' or 'tombstone'
  ARGV[3] (only when the write is traced and sampled) its W3C traceparent, announced as
          'deleted <traceparent>'
  Returns { 1, fields } when applied, { 0, fields } when older than the applied upsert; fields
  are those awaiting release.
]]
local at = tonumber(ARGV[1])
if ARGV[2] == 'event' then
  local applied = tonumber(redis.call('HGET', KEYS[2], 'occurredAt'))
  if applied and at < applied then return { 0, redis.call('SMEMBERS', KEYS[7]) } end
end
local devices = redis.call('HKEYS', KEYS[3])
for i = 1, #devices, 1000 do
  redis.call('SADD', KEYS[7], unpack(devices, i, math.min(i + 999, #devices)))
end
local rev = tonumber(redis.call('HGET', KEYS[8], '#rev')) or 0
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[8])
redis.call('HSET', KEYS[8], '#rev', rev + 1)
local marker = tonumber(redis.call('GET', KEYS[6]))
if not marker or at > marker then redis.call('SET', KEYS[6], ARGV[1]) end
redis.call('SPUBLISH', KEYS[9], ARGV[3] and 'deleted ' .. ARGV[3] or 'deleted')
return { 1, redis.call('SMEMBERS', KEYS[7]) }
