--[[
  Applies an installation upsert, last-writer-wins by occurredAt (equal: the later call wins).
  An upsert dated at or before the latest deletion is ignored (docs/events.md): a deletion and
  an upsert at the same instant leave the installation deleted in either order (the deletion
  script applies a deletion at the applied upsert's instant too). The deletion marker stays
  after a newer upsert re-creates the installation: telemetry at or before the deletion must
  still not bring back the devices it removed.
  KEYS[1] installation(id)       string, the Installation JSON
  KEYS[2] installationMeta(id)   hash occurredAt, companyId
  KEYS[3] internalOf(id, 'gone') string, epoch ms of the latest deletion
  KEYS[4] changeChannel(id)      sharded channel: 'installation' is announced when applied
  ARGV[1] Installation JSON
  ARGV[2] occurredAt, epoch ms
  ARGV[3] companyId, '' when none
  ARGV[4] (only when the write is traced and sampled) its W3C traceparent, announced as
          'installation <traceparent>'
  Returns 1 when applied, 0 when older than the applied upsert or not newer than the deletion.
]]
local occurred = tonumber(ARGV[2])
local applied = tonumber(redis.call('HGET', KEYS[2], 'occurredAt'))
if applied and occurred < applied then return 0 end
local deleted = tonumber(redis.call('GET', KEYS[3]))
if deleted and occurred <= deleted then return 0 end
redis.call('SET', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[2], 'occurredAt', ARGV[2], 'companyId', ARGV[3])
redis.call('SPUBLISH', KEYS[4], ARGV[4] and 'installation ' .. ARGV[4] or 'installation')
return 1
