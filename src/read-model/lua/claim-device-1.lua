--[[
  One operation of the device-move protocol (docs/projection.md) on a device's index entry, in
  the device's own slot. 'claim': the device lives in ARGV[2] since the observation ARGV[3],
  unless a newer claim by another installation or a newer removal stands (an equal one loses:
  the later event wins). 'remove': removed at
  ARGV[3]; the owner is cleared unless a newer claim stands. Idempotent: the same claim again
  returns the installation it was taken from, so a retried batch still releases it there.
  'adopt': a claim made without reading the entry first (the fold assumed the device new):
  done only when no entry stands, or when the installation already holds it with an older
  observation (what 'claim' does there); otherwise nothing changes and the entry comes back, so
  the owner folds again knowing it. Saves a read per new device.
  KEYS[1] internal('{d<category>:<id>}', 'idx')   hash inst, last, prev, removed ('' = none)
  ARGV[1] 'claim', 'remove' or 'adopt'   ARGV[2] installationId   ARGV[3] epoch ms
  Returns { status, installationId it was taken from or '' }: status 1 done, 0 a newer claim
  by another installation stands, -1 a newer removal stands; 'adopt' not done:
  { 2, inst, last, prev, removed } as stored.
]]
local e = redis.call('HMGET', KEYS[1], 'inst', 'last', 'prev', 'removed')
local inst, last, prev, removed = e[1] or '', tonumber(e[2]), e[3] or '', tonumber(e[4])
local at = tonumber(ARGV[3])
if ARGV[1] == 'adopt' then
  if inst == '' and not last and not removed then
    redis.call('HSET', KEYS[1], 'inst', ARGV[2], 'last', ARGV[3], 'prev', '')
    return { 1, '' }
  end
  if inst == ARGV[2] and last and at > last and not (removed and at < removed) then
    redis.call('HSET', KEYS[1], 'last', ARGV[3])
    return { 1, '' }
  end
  return { 2, inst, e[2] or '', prev, e[4] or '' }
end
if ARGV[1] == 'remove' then
  if removed and at <= removed then return { 1, '' } end
  redis.call('HSET', KEYS[1], 'removed', ARGV[3])
  if last and at < last then return { 1, '' } end
  redis.call('HSET', KEYS[1], 'inst', '')
  return { 1, inst }
end
if removed and at < removed then return { -1, '' } end
if inst == ARGV[2] then
  if last == at then return { 1, prev } end
  if not last or at > last then redis.call('HSET', KEYS[1], 'last', ARGV[3]) end
  return { 1, '' }
end
if inst ~= '' and last and at < last then return { 0, inst } end
redis.call('HSET', KEYS[1], 'inst', ARGV[2], 'last', ARGV[3], 'prev', inst)
return { 1, inst }
