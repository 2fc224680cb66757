--[[
  Applies one batch's changes to one installation, in its slot, if nobody else wrote it since
  the owner read it: the revision ('#rev' of the device-times hash) must still be the expected
  one. Every writer of the devices and flow bumps it (this script, delete-installation-9.lua),
  so a stale in-memory copy (a former owner, a redelivered batch) never overwrites a newer
  write: it gets { 0, revision } and reloads. Monotonic beyond that: a device record is
  replaced only by one observed no earlier. The flow needs no check of its own: its version
  'v' is the revision that wrote it, so a matching revision means no newer flow is stored.
  KEYS[1] devices(id)              KEYS[2] internalOf(id, 'fi')
  KEYS[3] flow(id)                 KEYS[4] changeChannel(id)
  ARGV[1] expected revision ('0' when none is stored)
  ARGV[2] flow data JSON, or '' when the flow did not change   ARGV[3] flow validUntil, epoch ms
  ARGV[4] n, the number of devices written, then n times: field, record JSON (HSET's own order),
          then n times: '<firstMs>;<lastMs>' of those devices, in the same order
  ARGV[5 + 3n ...] device fields deleted, then, when the write is traced and sampled, its W3C
          traceparent ('00-…': a field starts with its category's letters), announced with the
          change as '<kind> <traceparent>'; untraced, the announcement is the kind alone
  Returns { 1, new revision } when applied; { 0, stored revision } on a revision mismatch;
  { -1, field } when a stored record is newer.
]]
-- Runs `command key list[from..to]` in calls of at most CHUNK values (even: field, value pairs
-- stay together): Lua's unpack stops near 8,000 values, and an installation may change more
-- devices than that in one batch. Returns the replies, concatenated.
local CHUNK = 1000
local function chunked(command, key, list, from, to)
  local replies = {}
  for first = from, to, CHUNK do
    local reply = redis.call(command, key, unpack(list, first, math.min(first + CHUNK - 1, to)))
    if type(reply) == 'table' then
      for i = 1, #reply do replies[#replies + 1] = reply[i] end
    end
  end
  return replies
end
local expected = tonumber(ARGV[1])
local n = tonumber(ARGV[4])
local fields = { '#rev' }
for i = 0, n - 1 do fields[i + 2] = ARGV[5 + 2 * i] end
local stored = chunked('HMGET', KEYS[2], fields, 1, #fields)
if (tonumber(stored[1]) or 0) ~= expected then return { 0, stored[1] or '0' } end
-- The second part of '<firstMs>;<lastMs>' (an earlier release may have written a third part).
local function lastOf(times)
  local from = string.find(times, ';', 1, true) + 1
  local to = string.find(times, ';', from, true)
  return tonumber(string.sub(times, from, to and to - 1 or -1))
end
local firstTimes = 5 + 2 * n
-- The devices of one report share their times: each distinct text is read once.
local oldText, oldLast, newText, newLast
for i = 0, n - 1 do
  local old = stored[i + 2]
  if old then
    if old ~= oldText then oldText, oldLast = old, lastOf(old) end
    local new = ARGV[firstTimes + i]
    if new ~= newText then newText, newLast = new, lastOf(new) end
    if oldLast > newLast then return { -1, fields[i + 2] } end
  end
end
local rev = expected + 1
local times = { '#rev', rev }
if n > 0 then
  chunked('HSET', KEYS[1], ARGV, 5, 4 + 2 * n)
  for i = 0, n - 1 do
    times[#times + 1] = fields[i + 2]
    times[#times + 1] = ARGV[firstTimes + i]
  end
end
chunked('HSET', KEYS[2], times, 1, #times)
local firstDeleted = 5 + n * 3
local lastDeleted = #ARGV
local traceparent
-- 48: '0'. Looked at only when something follows the devices: untraced, that is a deletion.
if lastDeleted >= firstDeleted and string.byte(ARGV[lastDeleted]) == 48 then
  traceparent = ARGV[lastDeleted]
  lastDeleted = lastDeleted - 1
end
if lastDeleted >= firstDeleted then
  chunked('HDEL', KEYS[1], ARGV, firstDeleted, lastDeleted)
  chunked('HDEL', KEYS[2], ARGV, firstDeleted, lastDeleted)
end
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[3], 'data', ARGV[2], 'validUntil', ARGV[3], 'v', rev)
  redis.call('SPUBLISH', KEYS[4], traceparent and 'flow ' .. traceparent or 'flow')
else
  redis.call('SPUBLISH', KEYS[4], traceparent and 'devices ' .. traceparent or 'devices')
end
return { 1, rev }
