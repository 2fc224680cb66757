--[[
  One operation of the device-move protocol (docs/projection.md) on a device's index entry, in
  the device's own slot. 'claim': the device lives in ARGV[2] since the observation ARGV[3],
  unless a newer claim by another installation or a newer removal stands (an equal one loses:
  the later event wins). 'remove': removed at
  ARGV[3]; the owner is cleared unless a newer claim stands. Idempotent: the same claim again
  returns the installation it was taken from, so a retried batch still releases it there.
  A device the owner assumed new is claimed without this script: SET NX GET
  (src/read-model/installation-write.ts, adoptDevices).
  KEYS[1] internal('{d<category>:<id>}', 'own')   string '<inst>;<last>;<prev>;<removed>'
                                                   ('' = none; src/read-model/device-index-entry.ts)
  ARGV[1] 'claim' or 'remove'   ARGV[2] installationId   ARGV[3] epoch ms
  Returns { status, installationId it was taken from or '' }: status 1 done, 0 a newer claim
  by another installation stands, -1 a newer removal stands.
]]
local inst, lastText, prev, removedText =
  string.match(redis.call('GET', KEYS[1]) or ';;;', '^([^;]*);([^;]*);([^;]*);([^;]*)$')
local last, removed = tonumber(lastText), tonumber(removedText)
local at = tonumber(ARGV[3])
local function store(i, l, p, r)
  redis.call('SET', KEYS[1], i .. ';' .. l .. ';' .. p .. ';' .. r)
end
if ARGV[1] == 'remove' then
  if removed and at <= removed then return { 1, '' } end
  if last and at < last then
    store(inst, lastText, prev, ARGV[3])
    return { 1, '' }
  end
  store('', lastText, prev, ARGV[3])
  return { 1, inst }
end
if removed and at < removed then return { -1, '' } end
if inst == ARGV[2] then
  if last == at then return { 1, prev } end
  if not last or at > last then store(inst, ARGV[3], prev, removedText) end
  return { 1, '' }
end
if inst ~= '' and last and at < last then return { 0, inst } end
store(ARGV[2], ARGV[3], inst, removedText)
return { 1, inst }
